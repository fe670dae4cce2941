#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A JPEG whose data runs out stops decoding where it runs out.
@Suite struct JPEGTruncationStopsEarlyTests {
    /// testorig.jpg (227x149, 5.7 KB) with its frame header saying 65500x4096: its scan data ends in the
    /// first row of blocks. libjpeg pads the rest with zeros and only warns, so the decoder went on
    /// through every row before reporting `.truncated`: a 5.7 KB file declaring 65500x65500 cost 7 s
    /// of CPU at 1/8 scale, 17 s and 300 MB at full width (aic thumbnail, debug build).
    static func declaringAHugeFrame(height: Int) throws -> Data {
        var data = try Fixtures.data("jpeg", "testorig.jpg")
        let frame = try #require(ImageHeader.frameHeaderOffset(in: data))
        let size: [UInt8] = [UInt8(height >> 8), UInt8(height & 0xFF), 0xFF, 0xDC]  // height, width 65500
        data.replaceSubrange((frame + 3)..<(frame + 7), with: size)
        return data
    }

    @Test(arguments: [true, false])
    func aFileCutShortFailsAsTruncatedWithoutDecodingTheRowsItLacks(overlapping: Bool) throws {
        // Its data holds the first row of blocks, 8 rows of 1/8 scale at most.
        try Self.expectTruncatedEarly(Self.declaringAHugeFrame(height: 4096), overlapping: overlapping)
    }

    /// Decodes `data`, testorig.jpg's scan under a 65500x4096 frame, at 1/8 (8188x512) resized to 100x7,
    /// and checks that it fails as truncated within 64 of those 512 rows.
    static func expectTruncatedEarly(_ data: Data, overlapping: Bool) throws {
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 65500, height: 4096))
        let furthest = LockedBox(0)
        var context = ImageDecodingContext(header: header, minimumSize: PixelSize(width: 100, height: 7))
        context.cancellation = DecodeCancellation { rows, _ in furthest.withLock { $0 = max($0, rows) } }

        #expect(throws: ImageDecodingError(format: .jpeg, reason: .truncated)) {
            try ImageDecoders.JPEG().decode(
                data, context: context, resizedTo: PixelSize(width: 100, height: 7), overlapping: overlapping)
        }
        let rows = furthest.withLock { $0 }
        #expect(rows <= 64, "decoded \(rows) of 512 rows")
    }
}

extension ImageHeader {
    /// The offset of the first frame header's 2-byte length (for tests that rewrite its size).
    static func frameHeaderOffset(in data: Data) -> Int? {
        var found: Int?
        _ = try? walkJPEGSegments(HeaderBytes(data, format: .jpeg)) { marker, offset, _ in
            guard isStartOfFrame(marker) else { return true }
            found = offset
            return false
        }
        return found
    }
}
#endif
