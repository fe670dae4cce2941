#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A JPEG whose data holds every scan but stops where its EOI marker (FF D9) would be is the whole
/// image, as libjpeg's stdio source, djpeg, Pillow and browsers show it; a JPEG cut before its last
/// scan's data ends is not, and stays `.truncated`.
@Suite("JPEG without its EOI marker")
struct JPEGMissingEndOfImageTests {
    /// Baseline files (restart markers, 4:2:0, grayscale, CMYK) and progressive ones (4:4:4, 4:2:0, DC
    /// scans per component, grayscale, non-interleaved AC scans with a restart interval).
    static let wholeFiles = [
        "testorig.jpg", "video-001.q50.420.jpeg", "video-001.restart2.jpeg", "video-005.gray.jpeg",
        "video-001.cmyk.jpeg", "video-001.progressive.jpeg", "video-001.q50.420.progressive.jpeg",
        "video-001.separate.dc.progression.progressive.jpeg", "video-005.gray.q50.progressive.jpeg",
        "non-interleaved-mcu.jpg",
    ]

    /// `data` with its trailing EOI marker removed: both bytes, or only the D9 (the data ends in 0xFF).
    static func withoutEOI(_ data: Data, keepingFF: Bool = false) throws -> Data {
        try #require(data.suffix(2) == Data([0xFF, 0xD9]))
        return data.dropLast(keepingFF ? 1 : 2)
    }

    /// Decodes `data` at full size, at the scale covering a quarter of it (1/4; 1/2 for the 64x16 file), at
    /// 1/8 (where baseline goes to the DC-only decoder first) and resized to 20 pixels wide on both resizing
    /// paths.
    static func decodes(_ data: Data) throws -> [Bitmap] {
        let decoder = ImageDecoders.JPEG()
        let header = try ImageHeader.parse(data)
        let size = header.storedSize
        let quarter = PixelSize(width: size.width / 4, height: size.height / 4)
        let small = PixelSize(width: 20, height: max(1, size.height * 20 / size.width))
        let context = ImageDecodingContext(header: header)
        return [
            try decoder.decode(data, context: context),
            try decoder.decode(data, context: ImageDecodingContext(header: header, minimumSize: quarter)),
            try decoder.decode(
                data, context: ImageDecodingContext(header: header, minimumSize: PixelSize(width: 1, height: 1))),
            try decoder.decode(data, context: context, resizedTo: small, overlapping: true),
            try decoder.decode(data, context: context, resizedTo: small, overlapping: false),
        ]
    }

    /// Before, each threw `.truncated`: the memory source warns when the data runs out, and the decoder
    /// took that warning for a cut, though libjpeg's Huffman decoder had only read ahead and no bit was missing.
    @Test(arguments: wholeFiles)
    func aFileWithoutItsEOIMarkerDecodesAsTheWholeFile(name: String) throws {
        let whole = try Fixtures.data("jpeg", name)
        let expected = try Self.decodes(whole)
        for keepingFF in [false, true] {
            let decoded = try Self.decodes(try Self.withoutEOI(whole, keepingFF: keepingFF))
            for (bitmap, reference) in zip(decoded, expected) {
                #expect(bitmap.pixelSize == reference.pixelSize)
                #expect(bitmap.pixels == reference.pixels, "\(name), keeping FF: \(keepingFF)")
            }
        }
    }

    /// The error decoding `data` throws at full size and at 1/8 (where baseline goes to the DC-only decoder
    /// first), `nil` where it decodes.
    static func errors(_ data: Data) -> [ImageDecodingError?] {
        let decoder = ImageDecoders.JPEG()
        let header = ImageHeader(format: .jpeg, storedSize: StoredSize.jpeg(data) ?? PixelSize(width: 1, height: 1))
        return [nil, PixelSize(width: 1, height: 1)].map { minimumSize in
            decodingError { () throws(ImageDecodingError) in
                try decoder.decode(data, context: ImageDecodingContext(header: header, minimumSize: minimumSize))
            }
        }
    }

    /// Data that ends inside the last scan misses bits that scan needs: still `.truncated`, baseline or
    /// progressive, however few bytes are missing, and when the last scan's header is all there is of it.
    @Test func aFileCutInsideItsLastScanIsStillTruncated() throws {
        let truncated = ImageDecodingError(format: .jpeg, reason: .truncated)
        // testorig.jpg's one scan: its entropy-coded data runs from 623 to 5768, then EOI.
        let baseline = try Fixtures.data("jpeg", "testorig.jpg")
        #expect(baseline.count == 5770)
        for end in [5767, 5766, 5760, 5700, 4000, 624, 623] {
            #expect(Self.errors(baseline.prefix(end)) == [truncated, truncated], "testorig.jpg cut at \(end)")
        }
        // video-001.progressive.jpeg's last scan (Y's AC refinement): its header at 18170, data from
        // 18180 to 20730, then EOI.
        let progressive = try Fixtures.data("jpeg", "video-001.progressive.jpeg")
        #expect(progressive.count == 20732)
        for end in [20729, 20728, 20720, 20500, 19500, 18181, 18180] {
            #expect(
                Self.errors(progressive.prefix(end)) == [truncated, truncated],
                "video-001.progressive.jpeg cut at \(end)")
        }
    }

    /// A progressive file that ends after a scan with more to come has every bit of the scans it holds,
    /// and lacks the rest: `.truncated`, where it ends between scans as where it ends inside one (this
    /// was so before, and stays so).
    @Test func aProgressiveFileEndingBetweenScansIsStillTruncated() throws {
        let truncated = ImageDecodingError(format: .jpeg, reason: .truncated)
        let progressive = try Fixtures.data("jpeg", "video-001.progressive.jpeg")
        // After Cr's AC refinement (before the last DHT), after that DHT, inside it, and inside the last
        // scan's header.
        for end in [18133, 18170, 18150, 18175] {
            #expect(
                Self.errors(progressive.prefix(end)) == [truncated, truncated],
                "video-001.progressive.jpeg cut at \(end)")
        }
        // 4 of its 10 scans, then EOI: a coarse picture (the EOI says the file ends there). Without its EOI,
        // it is a file cut after its fourth scan.
        let fourScans = try Fixtures.data("jpeg", "video-001.progressive.truncated.jpeg")
        #expect(Self.errors(fourScans) == [nil, nil])
        #expect(Self.errors(try Self.withoutEOI(fourScans)) == [truncated, truncated])
    }

    /// Every prefix of these files short of their last scan's end, a marker segment or a scan cut anywhere:
    /// `.truncated`, never a picture with gray or coarse parts. (So it is for every file of the corpus,
    /// checked once byte by byte; these three are quick.)
    @Test(arguments: ["testorig.jpg", "video-005.gray.q50.progressive.jpeg", "non-interleaved-mcu.jpg"])
    func everyPrefixShortOfTheLastScansEndIsTruncated(name: String) throws {
        let whole = try Fixtures.data("jpeg", name)
        let truncated = ImageDecodingError(format: .jpeg, reason: .truncated)
        let decoded = (0..<(whole.count - 2)).filter { Self.errors(whole.prefix($0)) != [truncated, truncated] }
        #expect(decoded.isEmpty, "\(name): prefixes of \(decoded.prefix(20)) bytes")
    }

    /// Stray bytes between two segments (a stuffed FF 00 among them), which libjpeg and the header reader
    /// skip, do not make a whole file without its EOI marker look cut: before, the look at how the data ends
    /// wanted a marker right after each segment and took the file for a cut one (`.truncated`). A file cut in
    /// those bytes, before its scans, is still truncated.
    @Test(arguments: [[0x00, 0x12], [0xFF, 0x00, 0x07]] as [[UInt8]])
    func strayBytesBetweenSegmentsLeaveAFileWithoutItsEOIMarkerWhole(stray: [UInt8]) throws {
        let original = try Fixtures.data("jpeg", "testorig.jpg")
        let damaged = ImageHeaderJPEGTests.inserting(stray, afterSegmentAt: 2, of: original)
        let expected = try Self.decodes(original)
        for keepingFF in [false, true] {
            let decoded = try Self.decodes(try Self.withoutEOI(damaged, keepingFF: keepingFF))
            #expect(decoded == expected, "\(stray), keeping FF: \(keepingFF)")
        }
        let truncated = ImageDecodingError(format: .jpeg, reason: .truncated)
        #expect(Self.errors(damaged.prefix(2 + 18 + 1)) == [truncated, truncated])
    }

    /// An arithmetic-coded scan is decoded with zeros once its data runs out, without a word (hitting a
    /// marker is how such a scan may legally end), so whether its last bytes were all there cannot be
    /// told: without EOI, it stays `.truncated`, as before.
    @Test func anArithmeticCodedFileWithoutItsEOIMarkerStaysTruncated() throws {
        let arithmetic = try Fixtures.data("jpeg", "testimgari.jpg")
        #expect(Self.errors(arithmetic) == [nil, nil])
        let truncated = ImageDecodingError(format: .jpeg, reason: .truncated)
        #expect(Self.errors(try Self.withoutEOI(arithmetic)) == [truncated, truncated])
    }

    /// A server that always sends its JPEGs without EOI: the store shows the image, keeps it, and a second
    /// store on the folder finds it on disk. Before, each load downloaded it and failed with `.truncated`.
    @Test func theStoreShowsAFileWithoutItsEOIMarkerAndDownloadsItOnce() async throws {
        let folder = TemporaryDirectory("missing-eoi")
        let images = TemporaryDirectory("missing-eoi-images")
        let bytes = try Self.withoutEOI(try SampleImages.jpeg(width: 64, height: 48))
        try bytes.write(to: images.url.appendingPathComponent("a.jpg"))
        let server = try await TestHTTPServer(serving: images.url)
        defer { server.stop() }
        let url = server.url("/images/a.jpg")

        let first = try ImageStore.makeForTesting(root: folder.url)
        let image = try await first.image(for: ImageRequest(url: url, targetWidth: 32))
        #expect(image.pixelSize == PixelSize(width: 32, height: 24))
        first.waitForDiskMaintenance()
        let second = try ImageStore.makeForTesting(root: folder.url)
        let again = try await second.image(for: ImageRequest(url: url, targetWidth: 16))
        #expect(again.pixelSize == PixelSize(width: 16, height: 12))
        #expect(try await server.hits(for: "/images/a.jpg") == 1)
        #expect(second.statistics.diskHits == 1)
    }
}
#endif
