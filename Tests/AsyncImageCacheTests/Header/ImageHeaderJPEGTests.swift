import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct ImageHeaderJPEGTests {
    /// The table in Fixtures/exif-orientation/README.txt: Landscape_0...4 and Portrait_5...8 store
    /// 1800x1200 pixels, the others 1200x1800; the digit is the EXIF orientation, 0 meaning upright.
    static let exifSamples: [String] = (0...8).map { "Landscape_\($0).jpg" } + (0...8).map { "Portrait_\($0).jpg" }

    @Test(arguments: exifSamples)
    func exifSampleReportsItsStoredSizeAndOrientation(name: String) throws {
        let digit = Int(String(name.dropLast(4).last!))!
        let landscape = name.hasPrefix("Landscape")
        let storedLandscape = landscape == (digit <= 4)
        let header = try ImageHeader.parse(Fixtures.data("exif-orientation", name))
        #expect(header.format == .jpeg)
        #expect(
            header.storedSize
                == (storedLandscape ? PixelSize(width: 1800, height: 1200) : PixelSize(width: 1200, height: 1800)))
        #expect(header.orientation == (digit == 0 ? .up : ImageOrientation(rawValue: digit)!))
        // Every Landscape sample displays as a landscape, every Portrait as a portrait.
        #expect(
            header.displaySize
                == (landscape ? PixelSize(width: 1800, height: 1200) : PixelSize(width: 1200, height: 1800)))
    }

    @Test(arguments: ImageOrientation.allCases, [true, false])
    func orientationIsReadInEitherByteOrder(orientation: ImageOrientation, bigEndian: Bool) throws {
        let exif = SyntheticHeaders.tiff(orientation: orientation.rawValue, bigEndian: bigEndian)
        let header = try ImageHeader.parse(SyntheticHeaders.jpeg(width: 640, height: 480, exif: exif))
        #expect(
            header
                == ImageHeader(format: .jpeg, storedSize: PixelSize(width: 640, height: 480), orientation: orientation))
    }

    @Test(arguments: [0, 9, 255, 0xFFFF])
    func orientationOutsideOneToEightMeansUpright(value: Int) throws {
        let exif = SyntheticHeaders.tiff(orientation: value, bigEndian: true)
        #expect(try ImageHeader.parse(SyntheticHeaders.jpeg(width: 8, height: 8, exif: exif)).orientation == .up)
    }

    @Test func orientationOfTheWrongFieldTypeIsIgnored() throws {
        let exif = SyntheticHeaders.tiff(orientation: 6, bigEndian: false, fieldType: 4)
        #expect(try ImageHeader.parse(SyntheticHeaders.jpeg(width: 8, height: 8, exif: exif)).orientation == .up)
    }

    /// TIFF 6.0 and EXIF give the orientation one SHORT (count 1). Chrome, Safari (WebKit) and Firefox read it
    /// only with a count of 1; Pillow 13 and libexif 0.6.24 take the first value of a count of 2 and, like
    /// everyone, ignore a count of 0. We follow the specification and the browsers. Before: every count here
    /// read as orientation 6 (`.right`), from a value field that the count says is empty, holds two values
    /// or is an offset.
    @Test(arguments: [0, 2, 3, 0xFFFF_FFFF])
    func anOrientationEntryWhoseCountIsNotOneIsIgnored(count: UInt32) throws {
        // Landscape_6.jpg's IFD0 (big-endian) starts with the orientation entry: tag, type, then the count.
        var data = try Fixtures.data("exif-orientation", "Landscape_6.jpg")
        try #require(data[40..<48] == Data([0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01]))
        #expect(try ImageHeader.parse(data).orientation == .right)
        data.replaceSubrange(44..<48, with: withUnsafeBytes(of: count.bigEndian) { Data($0) })
        let header = try ImageHeader.parse(data)
        #expect(header == ImageHeader(format: .jpeg, storedSize: PixelSize(width: 1200, height: 1800)))
        let synthetic = SyntheticHeaders.tiff(orientation: 6, bigEndian: false, count: Int(count))
        #expect(try ImageHeader.parse(SyntheticHeaders.jpeg(width: 8, height: 8, exif: synthetic)).orientation == .up)
    }

    @Test func malformedExifStillGivesTheSize() throws {
        let broken: [UInt8] = Array("MM".utf8) + [0, 42, 0xFF, 0xFF, 0xFF, 0xF0]  // IFD0 far outside
        let header = try ImageHeader.parse(SyntheticHeaders.jpeg(width: 30, height: 20, exif: broken))
        #expect(header == ImageHeader(format: .jpeg, storedSize: PixelSize(width: 30, height: 20)))
    }

    @Test func fillBytesBeforeAMarkerAreSkipped() throws {
        let header = try ImageHeader.parse(SyntheticHeaders.jpeg(width: 33, height: 17, fillBytes: 5))
        #expect(header.storedSize == PixelSize(width: 33, height: 17))
    }

    /// `data` with `stray` inserted after its segment at byte `offset` (its marker) and before the next marker.
    static func inserting(_ stray: [UInt8], afterSegmentAt offset: Int, of data: Data) -> Data {
        let end = offset + 2 + (Int(data[offset + 2]) << 8 | Int(data[offset + 3]))
        return data.prefix(end) + stray + data.dropFirst(end)
    }

    /// Stray bytes between two segments before the scan, which some writers leave (libjpeg warns "Corrupt
    /// JPEG data: 2 extraneous bytes before marker 0xdb"): libjpeg's next_marker skips any bytes up to the
    /// next 0xFF that starts a marker (a stuffed FF 00 too), as Pillow does, and browsers show such a file.
    @Test(arguments: [[0x00, 0x12], [0x41], [0xFF, 0x00, 0x07]] as [[UInt8]])
    func strayBytesBetweenSegmentsAreSkippedAsLibjpegSkipsThem(stray: [UInt8]) throws {
        // testorig.jpg: SOI, then APP0 at byte 2, then its tables.
        let original = try Fixtures.data("jpeg", "testorig.jpg")
        let damaged = Self.inserting(stray, afterSegmentAt: 2, of: original)
        #expect(try ImageHeader.parse(damaged) == ImageHeader.parse(original))
        #if os(Linux)
        // libjpeg reads it whole, with a warning.
        #expect(
            try ImageDecoders.JPEG().decode(damaged, context: decodingContext(.jpeg))
                == ImageDecoders.JPEG().decode(original, context: decodingContext(.jpeg)))
        #endif

        // The EXIF segment after stray bytes still gives the orientation (Landscape_6.jpg: APP0 at byte 2, then APP1).
        let turned = try Fixtures.data("exif-orientation", "Landscape_6.jpg")
        let strayBeforeExif = Self.inserting(stray, afterSegmentAt: 2, of: turned)
        #expect(try ImageHeader.parse(strayBeforeExif) == ImageHeader.parse(turned))
        #expect(try ImageHeader.parse(strayBeforeExif).orientation == .right)
    }

    @Test func strayBytesThatEndTheDataAreTruncated() throws {
        let original = try Fixtures.data("jpeg", "testorig.jpg")
        let cut = Self.inserting([0x00, 0x12, 0x34], afterSegmentAt: 2, of: original).prefix(2 + 18 + 2)
        #expect(throws: ImageDecodingError(format: .jpeg, reason: .truncated)) { try ImageHeader.parse(cut) }
    }

    /// An EXIF segment after the frame header that runs past the store's first 16 KiB look (a thumbnail's
    /// worth of it) still turns the size read from growing prefixes, as it turns the decoded picture.
    @Test func aLargeExifSegmentAfterTheFrameHeaderTurnsTheSizeReadFromPrefixes() throws {
        let data = SyntheticHeaders.jpeg(
            width: 40, height: 30, exif: SyntheticHeaders.tiff(orientation: 6, bigEndian: false),
            exifAfterFrameHeader: true, exifPadding: 40_000)
        #expect(try ImageHeader.parse(data).displaySize == PixelSize(width: 30, height: 40))
        let header = ImageStore.readHeader { data.prefix($0) }
        #expect(header?.orientation == .right, "orientation read from prefixes: \(String(describing: header))")
        #expect(header?.displaySize == PixelSize(width: 30, height: 40))
        // A file cut inside that segment is cut short, not an upright image.
        #expect(throws: ImageDecodingError(format: .jpeg, reason: .truncated)) {
            try ImageHeader.parse(data.prefix(16 * 1024))
        }
    }

    /// Past ``ImageHeader/maximumStrayJPEGBytes`` of them, stray bytes make the file corrupt, where it no
    /// longer ends a read in growing prefixes that a run of them would otherwise take to the end.
    @Test func strayBytesPastTheLimitAreCorrupt() throws {
        let original = try Fixtures.data("jpeg", "testorig.jpg")
        let limit = 4096  // ImageHeader.maximumStrayJPEGBytes
        let atTheLimit = Self.inserting([UInt8](repeating: 0, count: limit), afterSegmentAt: 2, of: original)
        #expect(try ImageHeader.parse(atTheLimit) == ImageHeader.parse(original))
        let past = Self.inserting([UInt8](repeating: 0, count: limit + 1), afterSegmentAt: 2, of: original)
        #expect(
            throws: ImageDecodingError(
                format: .jpeg, reason: .corrupt("\(limit) bytes that start no marker at byte 20"))
        ) {
            try ImageHeader.parse(past)
        }
        // Found before the data ends: a prefix that ends among them is corrupt too, not cut.
        #expect(
            throws: ImageDecodingError(
                format: .jpeg, reason: .corrupt("\(limit) bytes that start no marker at byte 20"))
        ) {
            try ImageHeader.parse(past.prefix(20 + limit + 1))
        }
    }

    /// A run of 0xFF fill bytes or of stuffed FF 00 pairs is bounded as stray bytes are: a file of a JPEG
    /// segment and then 0xFF (erased flash) was walked to the end of each prefix and taken for a header that
    /// runs past it. Fill bytes before a marker, up to the limit, still parse.
    @Test(arguments: [[0xFF], [0xFF, 0x00]] as [[UInt8]])
    func runsOfFillBytesOrStuffedPairsPastTheLimitAreCorrupt(run: [UInt8]) throws {
        let original = try Fixtures.data("jpeg", "testorig.jpg")
        let limit = 4096  // ImageHeader.maximumStrayJPEGBytes
        let filled = Self.inserting([UInt8](repeating: 0xFF, count: limit), afterSegmentAt: 2, of: original)
        #expect(try ImageHeader.parse(filled) == ImageHeader.parse(original))
        // testorig.jpg's SOI and APP0 (20 bytes), then the run for 16 KiB, a prefix of a file that goes on so.
        let endless = original.prefix(20) + Array(repeating: run, count: 16384 / run.count).joined()
        // Before: .truncated, for each of them.
        #expect(
            throws: ImageDecodingError(
                format: .jpeg, reason: .corrupt("\(limit) bytes that start no marker at byte 20"))
        ) {
            try ImageHeader.parse(endless)
        }
    }

    /// A segment whose length falls short of its data, an EXIF thumbnail in it: the walk went on inside it,
    /// past the stray bytes up to the thumbnail's SOI, and took the thumbnail's frame header for the image's,
    /// where libjpeg fails the file ("two SOI markers").
    @Test(arguments: [[], [0x78, 0x78]] as [[UInt8]])
    func aSecondStartOfImageIsCorrupt(stray: [UInt8]) throws {
        let original = try Fixtures.data("jpeg", "testorig.jpg")
        // After testorig.jpg's APP0, an APP1 of 2 bytes, then the rest of what its data would be: stray bytes
        // and a 16x16 thumbnail's SOI and frame header.
        let thumbnail: [UInt8] = [
            0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x00, 0x10, 0x00, 0x10, 0x01, 0x01, 0x11, 0x00,
        ]
        let damaged = Self.inserting(
            [0xFF, 0xE1, 0x00, 0x04, 0x61, 0x62] + stray + thumbnail, afterSegmentAt: 2, of: original)
        let at = 26 + stray.count
        #expect(throws: ImageDecodingError(format: .jpeg, reason: .corrupt("a second start of image at byte \(at)"))) {
            try ImageHeader.parse(damaged)
        }
        #if os(Linux)
        #expect(throws: ImageDecodingError.self) {
            try ImageDecoders.JPEG().decode(damaged, context: decodingContext(.jpeg))
        }
        #endif
    }

    @Test(arguments: [UInt8(0xC1), 0xC2, 0xC3, 0xC9, 0xCF])
    func everyKindOfFrameHeaderGivesTheSize(marker: UInt8) throws {
        let header = try ImageHeader.parse(SyntheticHeaders.jpeg(width: 1024, height: 768, frameMarker: marker))
        #expect(header.storedSize == PixelSize(width: 1024, height: 768))
    }

    /// A hierarchical JPEG's size is the DHP segment's, before its first frame, which may be a smaller
    /// one scaled up later (T.81 B.3.2, Annex J): before, a 640x480 image whose first frame is a quarter
    /// size read as 160x120.
    @Test func aHierarchicalJPEGHasTheSizeOfItsDHPSegment() throws {
        func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] {
            [0xFF, marker, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
        }
        // Precision, height, width, one component (id 1, sampling 1x1, table 0).
        let wholeImage = segment(0xDE, [8, 0x01, 0xE0, 0x02, 0x80, 1, 1, 0x11, 0])
        let quarterFrame = segment(0xC1, [8, 0x00, 0x78, 0x00, 0xA0, 1, 1, 0x11, 0])
        let scan = segment(0xDA, [1, 1, 0, 0, 0x3F, 0]) + [UInt8](repeating: 0, count: 8) + [0xFF, 0xD9]
        let bytes = Data([0xFF, 0xD8] + wholeImage + quarterFrame + scan)
        #expect(try ImageHeader.parse(bytes).storedSize == PixelSize(width: 640, height: 480))
    }

    @Test func tablesBeforeTheFrameAreNotMistakenForIt() throws {
        // DHT (C4) is in the SOF range but is not a frame header: it must be skipped, not read as a size.
        var bytes = [UInt8](SyntheticHeaders.jpeg(width: 50, height: 40))
        bytes.insert(contentsOf: [0xFF, 0xC4, 0x00, 0x06, 0x00, 0x01, 0x02, 0x03], at: 2)
        #expect(try ImageHeader.parse(Data(bytes)).storedSize == PixelSize(width: 50, height: 40))
    }

    @Test func scanBeforeAnyFrameIsCorrupt() {
        let bytes = Data([0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02, 0xFF, 0xD9])
        #expect(throws: ImageDecodingError(format: .jpeg, reason: .corrupt("scan before a frame header"))) {
            try ImageHeader.parse(bytes)
        }
    }

    @Test func zeroWidthIsCorrupt() {
        #expect { try ImageHeader.parse(SyntheticHeaders.jpeg(width: 0, height: 10)) } throws: { error in
            guard let error = error as? ImageDecodingError, case .corrupt = error.reason else { return false }
            return error.format == .jpeg
        }
    }

    @Test func headerInsideADataSliceIsRead() throws {
        // Callers may hand in a slice whose indices do not start at zero.
        let padded = Data([1, 2, 3]) + SyntheticHeaders.jpeg(width: 12, height: 34)
        #expect(try ImageHeader.parse(padded[3...]).storedSize == PixelSize(width: 12, height: 34))
    }
}
