#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A GIF whose first frame's image data is all there but which stops before the block terminator (0x00) that
/// ends that data, or before the trailer (0x3B), is the whole picture, as giflib-based viewers and browsers
/// show it; a GIF cut before its data gives the frame's last pixel is not, and stays `.truncated`.
@Suite("GIF without its block terminator or trailer")
struct GIFMissingEndTests {
    let decoder = ImageDecoders.GIF()

    /// Single-frame files: plain, interlaced (its last row read is not its last row), 5-bit codes, and one
    /// with a transparent color.
    static let singleFrameFiles = [
        "video-001.gif", "video-001.interlaced.gif", "video-001.5bpp.gif", "triangle-001.gif",
    ]

    func decode(_ data: Data) -> Result<Bitmap, ImageDecodingError> {
        Result { () throws(ImageDecodingError) in try decoder.decode(data, context: decodingContext(.gif)) }
    }

    /// The offsets just past each data sub-block of the first image in `data`, the last of them where the
    /// block terminator is; read from the block structure, as the header reader walks it.
    static func firstImageSubBlockEnds(_ data: Data) throws -> [Int] {
        let bytes = [UInt8](data)
        var offset = 13 + (bytes[10] & 0x80 != 0 ? 3 << (Int(bytes[10] & 0x07) + 1) : 0)
        func skipSubBlocks() -> [Int] {
            var ends: [Int] = []
            while bytes[offset] != 0 {
                offset += 1 + Int(bytes[offset])
                ends.append(offset)
            }
            offset += 1
            return ends
        }
        while bytes[offset] == 0x21 {
            offset += 2
            _ = skipSubBlocks()
        }
        try #require(bytes[offset] == 0x2C)
        let flags = bytes[offset + 9]
        // The descriptor, its local color table, the LZW minimum code size.
        offset += 10 + (flags & 0x80 != 0 ? 3 << (Int(flags & 0x07) + 1) : 0) + 1
        return skipSubBlocks()
    }

    /// Before: `.truncated` without the terminator (giflib reads on to it after the last pixel and the read
    /// fails); without only the trailer it already decoded, since the trailer is never read.
    @Test(arguments: singleFrameFiles)
    func aFileWithoutItsBlockTerminatorOrTrailerDecodesAsTheWholeFile(name: String) throws {
        let whole = try Fixtures.data("gif", name)
        try #require(whole.suffix(2) == Data([0x00, 0x3B]))
        let expected = try decode(whole).get()
        let lastDataEnd = try #require(try Self.firstImageSubBlockEnds(whole).last)
        #expect(lastDataEnd == whole.count - 2)
        for cut in [1, 2] {
            let data = whole.dropLast(cut)
            #expect(try ImageHeader.parse(data) == ImageHeader.parse(whole))
            #expect(decode(data) == .success(expected), "\(name) without its last \(cut) bytes")
        }
    }

    /// Cut just after any sub-block before the last (where the next one's length byte would come), the
    /// frame's pixels are not all there. A cut inside the last sub-block is `GIFCutInLastSubBlockTests`'.
    @Test(arguments: singleFrameFiles)
    func aFileCutInsideTheFirstFramesDataIsStillTruncated(name: String) throws {
        let whole = try Fixtures.data("gif", name)
        let ends = try Self.firstImageSubBlockEnds(whole)
        let truncated = ImageDecodingError(format: .gif, reason: .truncated)
        for end in ends.dropLast() {
            #expect(decode(whole.prefix(end)) == .failure(truncated), "\(name) cut after \(end) bytes")
        }
    }
}
#endif
