#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// The DC-only decoder behind JPEG's 1/8 scale: what it takes, that it gives libjpeg's pixels, and
/// that splitting the data between two threads changes nothing, damaged data included.
@Suite("JPEG DC-only decoder", .ownThreads)
struct JPEGDCDecoderTests {
    static let jpegFixtures = (try? Fixtures.files(in: "jpeg", withExtensions: ["jpg", "jpeg"])) ?? []
    static let orientationFixtures = (try? Fixtures.files(in: "exif-orientation", withExtensions: ["jpg"])) ?? []

    /// libjpeg's own 1/8 scale, the reference.
    static func libjpegEighth(_ data: Data) throws -> Bitmap {
        var decoder = ImageDecoders.JPEG()
        decoder.allowsDCShortcut = false
        let header = try ImageHeader.parse(data)
        return try decoder.decode(
            data, context: ImageDecodingContext(header: header, minimumSize: PixelSize(width: 1, height: 1)))
    }

    /// A photo-like image: smooth colour fields with fine noise, so the entropy-coded data is large
    /// and both chroma and luma vary.
    static func texturedJPEG(width: Int, height: Int, quality: Int = 92) throws -> Data {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for y in 0..<height {
            for x in 0..<width {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let noise = Int(state >> 59)  // 0...31
                let offset = (y * width + x) * 4
                pixels[offset] = UInt8(clamping: (x * 200) / width + noise)
                pixels[offset + 1] = UInt8(clamping: (y * 200) / height + noise / 2)
                pixels[offset + 2] = UInt8(clamping: ((x ^ y) & 0x7F) + noise)
            }
        }
        return try ImageEncoders.JPEG(quality: quality).encode(Bitmap(width: width, height: height, pixels: pixels))
    }

    /// The corpora the tests below loop over are all there: an empty one would leave them checking nothing.
    @Test func theFixturesAreThere() {
        #expect(Self.jpegFixtures.count == 23)
        #expect(Self.orientationFixtures.count == 18)
    }

    @Test func itTakesBaselineHuffmanFilesAndDeclinesTheRest() throws {
        var taken: [String] = []
        for name in Self.jpegFixtures {
            if ImageDecoders.JPEG().decodeFromDC(try Fixtures.data("jpeg", name), threads: 1, alwaysSplit: false) != nil
            {
                taken.append(name)
            }
        }
        // Progressive, arithmetic, 12-bit, restart markers, RGB, CMYK, 4:1:1 and 4:1:0 (chroma at a
        // quarter), several scans and truncated data all go to libjpeg.
        #expect(
            taken == [
                "testorig.jpg", "video-001.221212.jpeg", "video-001.jpeg", "video-001.q50.420.jpeg",
                "video-001.q50.422.jpeg", "video-001.q50.440.jpeg", "video-001.q50.444.jpeg", "video-005.gray.jpeg",
            ])
    }

    @Test func everyFileItTakesComesOutExactlyAsLibjpegGivesIt() throws {
        // Grayscale, 4:4:4, 4:2:2, 4:4:0, 4:2:0 and Y 2x2 with chroma 1x2, small and large: the same
        // pixels as libjpeg's own 1/8 scale, split between two threads or not.
        var files = ["testorig.jpg", "video-001.221212.jpeg", "video-001.jpeg", "video-001.q50.420.jpeg"]
        files += ["video-001.q50.422.jpeg", "video-001.q50.440.jpeg", "video-001.q50.444.jpeg", "video-005.gray.jpeg"]
        var samples = try files.map { (name: $0, data: try Fixtures.data("jpeg", $0)) }
        samples.append((name: "textured 2400x1800", data: try Self.texturedJPEG(width: 2400, height: 1800)))
        samples.append(
            (name: "textured 1000x700 q60", data: try Self.texturedJPEG(width: 1000, height: 700, quality: 60)))
        for name in Self.orientationFixtures {
            samples.append((name: name, data: try Fixtures.data("exif-orientation", name)))
        }
        for sample in samples {
            let reference = try Self.libjpegEighth(sample.data)
            for threads in [1, 2] {
                let bitmap = try #require(
                    ImageDecoders.JPEG().decodeFromDC(sample.data, threads: threads, alwaysSplit: true),
                    "\(sample.name)")
                #expect(bitmap.pixelSize == reference.pixelSize, "\(sample.name)")
                #expect(bitmap.pixels == reference.pixels, "\(sample.name), \(threads) threads")
            }
        }
    }

    /// `data` with every entry of quantization table `table` set to `value`.
    static func quantizing(_ data: Data, table: Int, with value: UInt8) throws -> Data {
        var bytes = [UInt8](data)
        var offset = 2
        var patched = false
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] != 0xDA {
            let end = offset + 2 + Int(bytes[offset + 2]) << 8 + Int(bytes[offset + 3])
            if bytes[offset + 1] == 0xDB {
                var entry = offset + 4
                while entry < end {
                    let precision = Int(bytes[entry] >> 4), id = Int(bytes[entry] & 15)
                    let count = precision == 0 ? 64 : 128
                    if id == table, precision == 0 {
                        for index in (entry + 1)...(entry + count) { bytes[index] = value }
                        patched = true
                    }
                    entry += 1 + count
                }
            }
            offset = end
        }
        try #require(patched)
        return Data(bytes)
    }

    /// Chroma whose 2x2 transform lands past the sample range: libjpeg-turbo's plain C transform wraps such
    /// values around (its range-limit table), its SSE2 and NEON ones, which it runs instead, clamp them.
    /// The DC-only decoder copied the C one, so its pixels were not libjpeg's: such a file goes to libjpeg.
    /// Made by setting the chroma quantizer to 255 everywhere, so the chroma's AC coefficients weigh far
    /// more than any encoder would make them.
    @Test func chromaPastTheRangeOfTheTwoByTwoTransformIsLeftToLibjpeg() throws {
        let data = try Self.quantizing(Self.texturedJPEG(width: 256, height: 256), table: 1, with: 255)
        let reference = try Self.libjpegEighth(data)
        let header = try ImageHeader.parse(data)
        let eighth = try ImageDecoders.JPEG().decode(
            data, context: ImageDecodingContext(header: header, minimumSize: PixelSize(width: 1, height: 1)))
        let same = eighth.pixels == reference.pixels
        #expect(same, "the 1/8 scale differs from libjpeg's")
        #expect(ImageDecoders.JPEG().decodeFromDC(data, threads: 1, alwaysSplit: false) == nil)
        #expect(ImageDecoders.JPEG().decodeFromDC(data, threads: 2, alwaysSplit: true) == nil)
        // The unpatched file is still the shortcut's.
        let unpatched = try Self.texturedJPEG(width: 256, height: 256)
        #expect(ImageDecoders.JPEG().decodeFromDC(unpatched, threads: 1, alwaysSplit: false) != nil)
    }

    @Test func twoThreadsGiveTheSamePixelsAsOne() throws {
        var compared = 0
        for (folder, names) in [("jpeg", Self.jpegFixtures), ("exif-orientation", Self.orientationFixtures)] {
            for name in names {
                let data = try Fixtures.data(folder, name)
                let one = ImageDecoders.JPEG().decodeFromDC(data, threads: 1, alwaysSplit: false)
                let two = ImageDecoders.JPEG().decodeFromDC(data, threads: 2, alwaysSplit: true)
                #expect(one?.pixels == two?.pixels, "\(folder)/\(name)")
                compared += one == nil ? 0 : 1
            }
        }
        #expect(compared >= 8 + Self.orientationFixtures.count / 2)
        // Large enough to split without being told to: 1.4 MB of entropy-coded data and more.
        let photo = try Self.texturedJPEG(width: 2400, height: 1800)
        #expect(photo.count > 1 << 20)
        let one = try #require(ImageDecoders.JPEG().decodeFromDC(photo, threads: 1, alwaysSplit: false))
        let two = try #require(ImageDecoders.JPEG().decodeFromDC(photo, threads: 2, alwaysSplit: false))
        #expect(one.pixels == two.pixels)
        #expect(one.pixelSize == PixelSize(width: 300, height: 225))
    }

    @Test func damagedDataDecodesTheSameWayOnOneThreadAsOnTwo() throws {
        // A flipped byte anywhere: in the first half it throws the first thread off, near the
        // middle it is where the second starts, in the second half the second thread decodes it.
        // Whatever the result (an image with a smear, or a refusal), splitting must not change it.
        let photo = try Self.texturedJPEG(width: 800, height: 600)
        var declined = 0
        for fraction in stride(from: 0.05, to: 1.0, by: 0.05) {
            var damaged = photo
            let index = Int(Double(photo.count) * fraction)
            damaged[index] ^= 0x5A
            let one = ImageDecoders.JPEG().decodeFromDC(damaged, threads: 1, alwaysSplit: false)
            let two = ImageDecoders.JPEG().decodeFromDC(damaged, threads: 2, alwaysSplit: true)
            #expect(one?.pixels == two?.pixels, "byte \(index) of \(photo.count)")
            declined += one == nil ? 1 : 0
        }
        #expect(declined > 0)  // some of these damages are caught
    }

    /// An 8x8 grayscale baseline JPEG whose AC Huffman table declares `acCodesOfLengthOne` codes of
    /// one bit (two fit). libjpeg reads the table in the header and only rejects it when decoding starts.
    static func jpegWithOverfullHuffmanTable(acCodesOfLengthOne: Int) -> Data {
        let bytes = ByteWriter.build { jpeg in
            func segment(_ marker: UInt8, _ payload: [UInt8]) {
                jpeg.append([0xFF, marker])
                jpeg.uint16(payload.count + 2, bigEndian: true)
                jpeg.append(payload)
            }
            jpeg.append([0xFF, 0xD8])
            segment(0xDB, [0x00] + [UInt8](repeating: 1, count: 64))
            segment(0xC0, [8, 0, 8, 0, 8, 1, 1, 0x11, 0])
            // DC: one code of one bit, for difference size 0. AC: every code one bit long, all EOB.
            segment(0xC4, [0x00, 1] + [UInt8](repeating: 0, count: 15) + [0])
            segment(
                0xC4,
                [0x10, UInt8(acCodesOfLengthOne)] + [UInt8](repeating: 0, count: 15)
                    + [UInt8](repeating: 0, count: acCodesOfLengthOne))
            segment(0xDA, [1, 1, 0x00, 0, 63, 0])
            jpeg.append([0x00, 0x00, 0xFF, 0xD9])
        }
        return Data(bytes)
    }

    /// The DC-only decoder builds its look-up tables from the header's Huffman tables, which libjpeg
    /// has not checked yet: a length with more codes than it has room for must not write past the
    /// tables (it did, by up to half a megabyte, before the check that refuses such a table).
    @Test func aHuffmanTableWithTooManyCodesOfOneLengthIsRefusedBeforeItIsBuilt() async {
        await #expect(processExitsWith: .success) {
            let data = JPEGDCDecoderTests.jpegWithOverfullHuffmanTable(acCodesOfLengthOne: 255)
            for threads in [1, 2] {
                precondition(ImageDecoders.JPEG().decodeFromDC(data, threads: threads, alwaysSplit: true) == nil)
            }
            let context = ImageDecodingContext(
                header: ImageHeader(format: .jpeg, storedSize: PixelSize(width: 8, height: 8)),
                minimumSize: PixelSize(width: 1, height: 1))
            do throws(ImageDecodingError) {
                _ = try ImageDecoders.JPEG().decode(data, context: context)
                preconditionFailure("decoded an invalid Huffman table")
            } catch {
                guard case .corrupt = error.reason else { preconditionFailure("\(error)") }
            }
        }
    }

    /// Data that holds the whole scan and ends where its EOI marker would be (without the marker, or with its
    /// 0xFF alone) is the whole image to libjpeg, and so to this decoder: it declined, and libjpeg decoded it
    /// on one thread.
    @Test func dataThatEndsWhereItsEOIMarkerWouldBeDecodesAsTheWholeFile() throws {
        let photo = try Self.texturedJPEG(width: 800, height: 600)
        let reference = try Self.libjpegEighth(photo)
        for data in [photo.dropLast(2), photo.dropLast(1)] {
            #expect(try Self.libjpegEighth(data).pixels == reference.pixels)
            for threads in [1, 2] {
                let decoded = ImageDecoders.JPEG().decodeFromDC(data, threads: threads, alwaysSplit: true)
                #expect(decoded?.pixels == reference.pixels, "\(data.count) bytes, \(threads) threads")
            }
        }
        // One byte of the scan fewer: declined, and libjpeg says truncated.
        let cut = photo.dropLast(3)
        #expect(ImageDecoders.JPEG().decodeFromDC(cut, threads: 1, alwaysSplit: false) == nil)
        #expect(throws: ImageDecodingError(format: .jpeg, reason: .truncated)) { try Self.libjpegEighth(cut) }
    }

    @Test func dataThatEndsEarlyOrCarriesJunkIsLeftToLibjpeg() throws {
        let photo = try Self.texturedJPEG(width: 800, height: 600)
        for threads in [1, 2] {
            // Cut inside the entropy-coded data: declined, and the decode through libjpeg says truncated.
            let cut = photo.prefix(photo.count * 7 / 10)
            #expect(ImageDecoders.JPEG().decodeFromDC(Data(cut), threads: threads, alwaysSplit: true) == nil)
            // Bytes of junk before EOI: declined as well.
            var junk = photo.dropLast(2)
            junk.append(contentsOf: [0x12, 0x34, 0x56, 0xFF, 0xD9])
            #expect(ImageDecoders.JPEG().decodeFromDC(Data(junk), threads: threads, alwaysSplit: true) == nil)
        }
        // A frame header promising 16000x12000 over the data of 800x600: far more blocks than the
        // data holds. The DC-only decoder runs out of data and declines; libjpeg meets the EOI marker
        // with blocks still to decode, which is data that ended early just as a cut file is.
        var inflated = photo
        let frame = try #require((0..<(photo.count - 9)).first { photo[$0] == 0xFF && photo[$0 + 1] == 0xC0 })
        inflated.replaceSubrange((frame + 5)..<(frame + 9), with: [0x2E, 0xE0, 0x3E, 0x80])
        #expect(try ImageHeader.parse(inflated).storedSize == PixelSize(width: 16_000, height: 12_000))
        for threads in [1, 2] {
            #expect(ImageDecoders.JPEG().decodeFromDC(inflated, threads: threads, alwaysSplit: true) == nil)
        }
        let eighth = ImageDecodingContext(
            header: try ImageHeader.parse(inflated), minimumSize: PixelSize(width: 320, height: 240))
        #expect(throws: ImageDecodingError(format: .jpeg, reason: .truncated)) {
            try ImageDecoders.JPEG().decode(inflated, context: eighth)
        }
        // The same cut with EOI put back after it: also truncated, not a picture half gray.
        var cutWithEnd = Data(photo.prefix(photo.count * 7 / 10))
        cutWithEnd.append(contentsOf: [0xFF, 0xD9])
        #expect(throws: ImageDecodingError(format: .jpeg, reason: .truncated)) {
            try ImageDecoders.JPEG().decode(cutWithEnd, context: eighth)
        }

        let context = ImageDecodingContext(
            header: try ImageHeader.parse(photo), minimumSize: PixelSize(width: 50, height: 40))
        #expect(throws: ImageDecodingError(format: .jpeg, reason: .truncated)) {
            try ImageDecoders.JPEG().decode(Data(photo.prefix(photo.count * 7 / 10)), context: context)
        }
        // Whole, it goes through the shortcut and back out the same as libjpeg's own 1/8 scale would
        // resize to: the public decode at a 1/8 scale uses it.
        let decoded = try ImageDecoders.JPEG().decode(photo, context: context)
        #expect(decoded.pixels == ImageDecoders.JPEG().decodeFromDC(photo, threads: 1, alwaysSplit: false)?.pixels)
    }
}
#endif
