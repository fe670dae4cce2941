#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A WebP whose EXIF chunk declares more bytes than its RIFF size leaves it: libwebp decodes the picture, which
/// lies before the chunk and is all there, and never reads the chunk. The header reader agrees: the chunk is
/// not whole, it says nothing about orientation, and the file is not `.truncated`.
@Suite("WebP with an EXIF chunk past the RIFF size")
struct WebPExifPastTheEndTests {
    /// A real lossy file's image chunk in an extended (VP8X) container flagging EXIF, then an EXIF chunk that
    /// holds a TIFF structure saying orientation 6 but declares `missingBytes` more than it holds. The RIFF
    /// size counts the bytes there are, or with `riffCountsMissingBytes` the ones declared too.
    static func file(missingBytes: Int, riffCountsMissingBytes: Bool = false) throws -> (simple: Data, extended: Data) {
        let simple = try Fixtures.data("webp", "video-001.lossy.webp")
        let header = try ImageHeader.parse(simple)
        let chunks = ByteWriter.build { body in
            body.ascii("VP8X")
            body.uint32(10, bigEndian: false)
            body.append([0x08, 0, 0, 0])
            body.uint24LE(header.storedSize.width - 1)
            body.uint24LE(header.storedSize.height - 1)
            body.append([UInt8](simple.dropFirst(12)))
        }
        let extended = SampleImages.webp(
            chunks: chunks, then: [.exif(missingBytes: missingBytes)], riffCountsMissingBytes: riffCountsMissingBytes)
        return (simple, extended)
    }

    func decode(_ data: Data) -> Result<Bitmap, ImageDecodingError> {
        Result { () throws(ImageDecodingError) in
            try ImageDecoders.WebP().decode(data, context: decodingContext(.webp))
        }
    }

    /// Before: the header reader threw `.truncated` for every such file, however many bytes came, while the
    /// decoder gave the picture.
    @Test(arguments: [1, 2, 64, 1 << 20])
    func anExifChunkThatRunsPastTheRIFFSizeIsIgnoredAndThePictureDecodes(missingBytes: Int) throws {
        let (simple, extended) = try Self.file(missingBytes: missingBytes)
        let header = try ImageHeader.parse(extended)
        #expect(header == ImageHeader(format: .webp, storedSize: try ImageHeader.parse(simple).storedSize))
        #expect(decode(extended) == decode(simple))
        // Every prefix is still either `.truncated` or that answer.
        for length in stride(from: 0, to: extended.count, by: 97) {
            do {
                #expect(try ImageHeader.parse(extended.prefix(length)) == header, "prefix of \(length) bytes")
            } catch {
                #expect(error.reason == .truncated, "prefix of \(length) bytes: \(error)")
            }
        }
    }

    /// When the RIFF size counts the missing bytes too, the file is cut: libwebp's one call reports it as
    /// truncated, and so does the decoder. The header reader has the chunk's orientation entry, which lies
    /// before the cut, and answers the size as displayed (see `WebPCutInTrailingMetadataTests`).
    @Test func anExifChunkCutInsideTheRIFFSizeIsTruncatedWithItsOrientationKnown() throws {
        let (simple, extended) = try Self.file(missingBytes: 64, riffCountsMissingBytes: true)
        let truncated = ImageDecodingError(format: .webp, reason: .truncated)
        #expect(
            try ImageHeader.parse(extended)
                == ImageHeader(format: .webp, storedSize: try ImageHeader.parse(simple).storedSize, orientation: .right)
        )
        #expect(decode(extended) == .failure(truncated))
    }

    /// The same chunk whole is read: the orientation comes from it.
    @Test func aWholeExifChunkStillTurnsThePicture() throws {
        let (_, extended) = try Self.file(missingBytes: 0)
        #expect(try ImageHeader.parse(extended).orientation == .right)
    }
}
#endif
