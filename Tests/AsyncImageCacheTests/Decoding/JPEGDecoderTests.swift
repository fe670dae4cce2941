#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

@Suite("JPEG decoder")
struct JPEGDecoderTests {
    static let corpus = (try? Fixtures.files(in: "jpeg", withExtensions: ["jpg", "jpeg"])) ?? []
    /// The corpus minus the 12-bit file and the two byte-truncated ones (see Fixtures/jpeg/README.txt).
    static let decodable = corpus.filter { $0 != "monkey12.jpg" && !$0.contains("truncated-half") }

    let decoder = ImageDecoders.JPEG()

    @Test func theCorpusHoldsEveryFileItsReadmeLists() {
        #expect(Self.corpus.count == 23)
        #expect(Self.decodable.count == 20)
    }

    @Test func theTestLocalFrameReaderAgreesWithFile() throws {
        // Sizes printed by `file(1)` for these fixtures.
        #expect(StoredSize.jpeg(try Fixtures.data("jpeg", "testorig.jpg")) == PixelSize(width: 227, height: 149))
        #expect(
            StoredSize.jpeg(try Fixtures.data("jpeg", "non-interleaved-mcu.jpg"))
                == PixelSize(width: 64, height: 16))
        #expect(
            StoredSize.jpeg(try Fixtures.data("jpeg", "video-001.cmyk.jpeg")) == PixelSize(width: 150, height: 103))
    }

    @Test(arguments: decodable)
    func everyEightBitFileDecodesAtTheSizeItsFrameDeclares(name: String) throws {
        let data = try Fixtures.data("jpeg", name)
        let expected = try #require(StoredSize.jpeg(data))
        let bitmap = try decoder.decode(data, context: decodingContext(.jpeg))
        #expect(bitmap.pixelSize == expected)
        #expect(stride(from: 3, to: bitmap.pixels.count, by: 4).allSatisfy { bitmap.pixels[$0] == 255 })
        // A picture, not libjpeg's gray padding: the color samples spread over a wide range. The exception is
        // non-interleaved-mcu.jpg, which exercises MCU counting and is uniformly near-black (libjpeg's djpeg
        // agrees: every sample is 2).
        guard name != "non-interleaved-mcu.jpg" else { return }
        let samples = bitmap.pixels.enumerated().filter { $0.offset % 4 != 3 }.map(\.element)
        #expect(samples.max()! - samples.min()! > 100)
    }

    @Test(arguments: ["video-001.q50.420.truncated-half.jpeg", "video-001.progressive.truncated-half.jpeg"])
    func dataThatEndsMidScanThrowsTruncated(name: String) throws {
        let data = try Fixtures.data("jpeg", name)
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.jpeg))
        }
        #expect(error == ImageDecodingError(format: .jpeg, reason: .truncated))
    }

    @Test func everyPrefixOfAFileThrowsATypedErrorInsteadOfCrashing() throws {
        let data = try Fixtures.data("jpeg", "video-001.q50.420.progressive.jpeg")
        for length in stride(from: 0, to: data.count - 2, by: 97) {
            let prefix = data.prefix(length)
            let error = decodingError { () throws(ImageDecodingError) in
                try decoder.decode(prefix, context: decodingContext(.jpeg))
            }
            #expect(error?.format == .jpeg, "prefix of \(length) bytes")
        }
    }

    @Test func aTwelveBitFileIsAnUnsupportedFeature() throws {
        let data = try Fixtures.data("jpeg", "monkey12.jpg")
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.jpeg))
        }
        #expect(error == ImageDecodingError(format: .jpeg, reason: .unsupportedFeature("12-bit")))
    }

    /// JPEG allows sides up to 65535; libjpeg-turbo reads up to 65500 (JPEG_MAX_DIMENSION). A wider file is
    /// valid, and no refetch would mend it: it threw `.corrupt`, which a store takes for damage (it
    /// removes a cached copy and downloads it again, each load).
    @Test func aSideOverLibjpegsMaximumIsAnUnsupportedFeature() throws {
        var data = try Fixtures.data("jpeg", "testorig.jpg")
        let frame = try #require(ImageHeader.frameHeaderOffset(in: data))
        data.replaceSubrange((frame + 3)..<(frame + 7), with: [0x00, 0x10, 0xFF, 0xFF])  // 65535x16
        let error = try #require(
            decodingError { () throws(ImageDecodingError) in
                try decoder.decode(data, context: decodingContext(.jpeg, minimumSize: PixelSize(width: 100, height: 1)))
            })
        #expect(
            error
                == ImageDecodingError(
                    format: .jpeg, reason: .unsupportedFeature("Maximum supported image dimension is 65500 pixels")))
        #expect(!error.reason.suggestsDamage)
    }

    /// testorig.jpg (YCbCr, components 1, 2 and 3 in one scan) with a frame of `count` components: its own
    /// first ones, then ids 4, 5, ... sampled 1x1. With 2, its scan lists components 1 and 2.
    static func withFrameComponents(_ count: Int) throws -> Data {
        var data = try Fixtures.data("jpeg", "testorig.jpg")
        let frame = try #require(ImageHeader.frameHeaderOffset(in: data))
        let length = Int(data[frame]) << 8 | Int(data[frame + 1])
        let own = Array(data[(frame + 8)..<(frame + length)])
        var components: [UInt8] = []
        for index in 0..<count {
            components += index < 3 ? Array(own[(3 * index)..<(3 * index + 3)]) : [UInt8(index + 1), 0x11, 0x00]
        }
        let newLength = 8 + components.count
        var segment: [UInt8] = [UInt8(newLength >> 8), UInt8(newLength & 0xFF)]
        segment += data[(frame + 2)..<(frame + 7)]  // precision, height, width
        segment += [UInt8(count)] + components
        data.replaceSubrange(frame..<(frame + length), with: segment)
        if count < 3 {
            let scan = try #require((0..<(data.count - 1)).first { data[$0] == 0xFF && data[$0 + 1] == 0xDA })
            // Length, component count and 3 selectors (2 bytes each), Ss, Se, Ah/Al.
            let selectors = Array(data[(scan + 5)..<(scan + 5 + 2 * count)])
            let tail = Array(data[(scan + 11)..<(scan + 14)])
            var scanHeader: [UInt8] = [0, UInt8(6 + 2 * count), UInt8(count)]
            scanHeader += selectors
            scanHeader += tail
            data.replaceSubrange((scan + 2)..<(scan + 14), with: scanHeader)
        }
        return data
    }

    /// JPEG allows 1 to 255 components; this decoder shows 1 (gray), 3 (YCbCr, RGB) and 4 (CMYK, YCCK),
    /// and libjpeg-turbo reads at most 10 (MAX_COMPONENTS). Any other count is a valid file this decoder
    /// cannot show, and no refetch would mend it: `.unsupportedFeature`, which a store does not take for
    /// damage. Over 10 threw `.corrupt("Too many color components: 11, max 10")` (libjpeg's
    /// JERR_COMPONENT_COUNT), so a store removed a cached copy and downloaded it again on each load.
    @Test(arguments: [2, 5, 6, 7, 8, 9, 10, 11, 12, 64, 255])
    func aFrameOfAComponentCountThisDecoderCannotShowIsAnUnsupportedFeature(count: Int) throws {
        let data = try Self.withFrameComponents(count)
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 227, height: 149))
        for minimumSize in [nil, PixelSize(width: 100, height: 60), PixelSize(width: 1, height: 1)] {
            let error = try #require(
                decodingError { () throws(ImageDecodingError) in
                    try decoder.decode(data, context: decodingContext(.jpeg, minimumSize: minimumSize))
                })
            // libjpeg refuses a frame over 10 in jpeg_read_header; converting the others to RGB, in
            // jpeg_start_decompress.
            let message =
                count > 10 ? "Too many color components: \(count), max 10" : "Unsupported color conversion request"
            #expect(error == ImageDecodingError(format: .jpeg, reason: .unsupportedFeature(message)), "\(count)")
            #expect(!error.reason.suggestsDamage)
        }
        let resized = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(
                data, context: decodingContext(.jpeg), resizedTo: PixelSize(width: 50, height: 33), overlapping: false)
        }
        #expect(resized?.reason.suggestsDamage == false, "\(count) components: \(String(describing: resized))")
    }

    /// The counts it shows, built the same way, still decode (the frame and scan rewriting is sound).
    @Test func theComponentCountsThisDecoderShowsStillDecode() throws {
        let bitmap = try decoder.decode(try Self.withFrameComponents(3), context: decodingContext(.jpeg))
        #expect(bitmap.pixelSize == PixelSize(width: 227, height: 149))
        #expect(
            bitmap.pixels
                == (try decoder.decode(try Fixtures.data("jpeg", "testorig.jpg"), context: decodingContext(.jpeg)))
                .pixels)
    }

    @Test func adobeCMYKDecodesToTheColorsOfTheSamePictureInYCbCr() throws {
        let cmyk = try decoder.decode(
            try Fixtures.data("jpeg", "video-001.cmyk.jpeg"), context: decodingContext(.jpeg))
        let reference = try decoder.decode(
            try Fixtures.data("jpeg", "video-001.jpeg"), context: decodingContext(.jpeg))
        // ImageMagick made the CMYK file from linear-light RGB (its first pixel stores K = 51 for an sRGB red
        // of 126, and 126 is 0.2 in linear light), so the untagged CMYK decodes to the linear values.
        #expect(cmyk.meanColorDifference(from: reference.linearized()) < 8)
        // Read without undoing Adobe's inversion, the picture would be its negative.
        #expect(cmyk.meanColorDifference(from: reference.linearized().inverted()) > 100)
    }

    @Test func grayscaleDecodesToEqualRedGreenAndBlue() throws {
        let bitmap = try decoder.decode(
            try Fixtures.data("jpeg", "video-005.gray.jpeg"), context: decodingContext(.jpeg))
        #expect(bitmap.isGray)
    }

    @Test func theSmallestCoveringScaleIsChosen() {
        let size = PixelSize(width: 1024, height: 768)
        // 2/8 gives 256x192, too small for 300 wide; 3/8 gives 384x288.
        #expect(
            ImageDecoders.JPEG.scaleNumerator(imageSize: size, covering: PixelSize(width: 300, height: 200)) == 3)
        #expect(
            ImageDecoders.JPEG.scaleNumerator(imageSize: size, covering: PixelSize(width: 128, height: 96)) == 1)
        #expect(
            ImageDecoders.JPEG.scaleNumerator(imageSize: size, covering: PixelSize(width: 129, height: 10)) == 2)
        // Height can be the dimension that decides.
        #expect(
            ImageDecoders.JPEG.scaleNumerator(imageSize: size, covering: PixelSize(width: 10, height: 500)) == 6)
        #expect(
            ImageDecoders.JPEG.scaleNumerator(imageSize: size, covering: PixelSize(width: 2000, height: 10)) == 8)
        #expect(ImageDecoders.JPEG.scaleNumerator(imageSize: size, covering: nil) == 8)
    }

    @Test func aScaledDecodeProducesTheSizeOfTheChosenScale() throws {
        let data = try ImageEncoders.JPEG().encode(
            .drawing(width: 1024, height: 768) { x, y in
                (UInt8(x % 256), UInt8(y % 256), 128, 255)
            })
        let scaled = try decoder.decode(
            data, context: decodingContext(.jpeg, minimumSize: PixelSize(width: 300, height: 200)))
        #expect(scaled.pixelSize == PixelSize(width: 384, height: 288))
    }

    @Test func scaledSizesRoundUpForDimensionsThatAreNotMultiplesOfEight() throws {
        // 227x149 at 4/8 is 113.5x74.5, which libjpeg rounds up to 114x75; 3/8 (86 wide) would not cover 100.
        let data = try Fixtures.data("jpeg", "testorig.jpg")
        let bitmap = try decoder.decode(
            data, context: decodingContext(.jpeg, minimumSize: PixelSize(width: 100, height: 60)))
        #expect(bitmap.pixelSize == PixelSize(width: 114, height: 75))
    }

    @Test func aLargePhotoDecodedForAThumbnailNeverAllocatesTheFullBitmap() throws {
        // 8000x6000 with a horizontal red ramp, built one row at a time to keep the test fast.
        let width = 8000
        let height = 6000
        let row = (0..<width).flatMap { x -> [UInt8] in [UInt8(x * 255 / (width - 1)), 40, 200, 255] }
        let pixels = [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, count in
            row.withUnsafeBufferPointer { source in
                for y in 0..<height {
                    UnsafeMutableRawPointer(buffer.baseAddress! + y * width * 4)
                        .copyMemory(from: source.baseAddress!, byteCount: source.count)
                }
            }
            count = width * height * 4
        }
        let data = try ImageEncoders.JPEG(quality: 80).encode(Bitmap(width: width, height: height, pixels: pixels))
        let budget = 2_000_000

        let thumbnail = try decoder.decode(
            data,
            context: decodingContext(.jpeg, minimumSize: PixelSize(width: 320, height: 240), pixelBudget: budget)
        )
        #expect(thumbnail.pixelSize == PixelSize(width: 1000, height: 750))
        #expect(thumbnail.pixel(x: 0, y: 375).red < 30)
        #expect(thumbnail.pixel(x: 999, y: 375).red > 225)

        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.jpeg, pixelBudget: budget))
        }
        #expect(
            error
                == ImageDecodingError(
                    format: .jpeg, reason: .pixelBudgetExceeded(pixels: 48_000_000, budget: budget)))
    }

    @Test func aHugeProgressiveFileIsRefusedEvenWhenAskedForAThumbnail() throws {
        // Progressive decoding keeps the full image's coefficients whatever the scale, here 30000x30000
        // (several gigabytes); the file claims that size in its frame header.
        var data = try Fixtures.data("jpeg", "video-001.progressive.jpeg")
        let frame = try #require(StoredSize.jpegFrameOffset(data))
        data.replaceSubrange(frame + 5..<frame + 9, with: [0x75, 0x30, 0x75, 0x30])
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(
                data, context: decodingContext(.jpeg, minimumSize: PixelSize(width: 100, height: 100)))
        }
        let budget = ImageDecodingContext.defaultPixelBudget
        #expect(
            error
                == ImageDecodingError(
                    format: .jpeg, reason: .pixelBudgetExceeded(pixels: 900_000_000, budget: budget)))
    }

    @Test func libjpegsOwnMemoryCapStopsAProgressiveDecode() throws {
        let data = try Fixtures.data("jpeg", "video-001.progressive.jpeg")
        let context = decodingContext(.jpeg)
        // The same file decodes under the cap derived from the budget and fails under a 16 KiB one.
        #expect(try decoder.decode(data, context: context).pixelSize == PixelSize(width: 150, height: 103))
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: context, memoryLimit: 16 * 1024)
        }
        let reason = ImageDecodingError.Reason.pixelBudgetExceeded(pixels: 150 * 103, budget: context.pixelBudget)
        #expect(error == ImageDecodingError(format: .jpeg, reason: reason))
    }

    @Test func randomBytesBehindAJPEGSignatureThrowATypedError() {
        var generator = SeededGenerator(seed: 2024)
        for _ in 0..<200 {
            let data = Data([0xFF, 0xD8, 0xFF] + generator.bytes(Int.random(in: 1...4096, using: &generator)))
            let error = decodingError { () throws(ImageDecodingError) in
                try decoder.decode(data, context: decodingContext(.jpeg))
            }
            #expect(error?.format == .jpeg)
        }
    }

    @Test func emptyDataThrowsTruncated() {
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(Data(), context: decodingContext(.jpeg))
        }
        #expect(error == ImageDecodingError(format: .jpeg, reason: .truncated))
    }
}
#endif
