#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A WebP download cut short after its picture, in the EXIF and XMP chunks the format puts at the end: the RIFF
/// size counts bytes the data does not hold. The decoder gives a picture only when the header reader can tell
/// its displayed size (EXIF orientation applied) from the same bytes: an animation's frame 1 once the header
/// has the orientation, a still image (libwebp's `WebPDecode` checks the RIFF size) only whole.
@Suite("WebP cut in the metadata after its picture")
struct WebPCutInTrailingMetadataTests {
    /// anim.webp (six frames of 200x200) with the EXIF and XMP flags set, then a whole EXIF chunk (a TIFF
    /// structure saying orientation 6) and a whole XMP chunk.
    static func animation() throws -> Data {
        try WebPAnimationExifPastTheEndTests.file(then: [.exif(), .xmp()])
    }

    /// A real lossy file's image chunk (150x103) in a VP8X container flagging EXIF and XMP, then the same
    /// two chunks.
    static func still() throws -> Data {
        let simple = try Fixtures.data("webp", "video-001.lossy.webp")
        let size = try ImageHeader.parse(simple).storedSize
        let chunks = ByteWriter.build { body in
            body.ascii("VP8X")
            body.uint32(10, bigEndian: false)
            body.append([0x0C, 0, 0, 0])
            body.uint24LE(size.width - 1)
            body.uint24LE(size.height - 1)
            body.append([UInt8](simple.dropFirst(12)))
        }
        return SampleImages.webp(chunks: chunks, then: [.exif(), .xmp()], riffCountsMissingBytes: false)
    }

    /// Where the EXIF chunk starts in `file`: the TIFF structure is 8 bytes further on, and its orientation
    /// entry (IFD0's second) takes its bytes 22 to 33.
    static func exifChunk(in file: Data) throws -> Int {
        try #require(file.firstRange(of: Data("EXIF".utf8), in: 30..<file.count)).lowerBound
    }

    func decode(_ data: Data, chunked: Bool = false) -> Result<Bitmap, ImageDecodingError> {
        var context = decodingContext(.webp)
        // As a store decodes: through the incremental decoder, 256 bytes at a time.
        if chunked { context.cancellation = DecodeCancellation() }
        let decoder = ImageDecoders.WebP(chunkSize: chunked ? 256 : nil)
        return Result { () throws(ImageDecodingError) in try decoder.decode(data, context: context) }
    }

    func header(_ data: Data) -> Result<ImageHeader, ImageDecodingError> {
        Result { () throws(ImageDecodingError) in try ImageHeader.parse(data) }
    }

    /// Before: every such cut of the animation after frame 1 (from byte 1838) decoded to frame 1 while its
    /// header was `.truncated`, its displayed size unknown.
    @Test func anAnimationCutBeforeItsOrientationIsTruncatedForTheDecoderAsForTheHeader() throws {
        let file = try Self.animation()
        let exif = try Self.exifChunk(in: file)
        let truncated = ImageDecodingError(format: .webp, reason: .truncated)
        // In frame 2, at the EXIF chunk, in its size, in the TIFF header and in IFD0 before the orientation.
        for length in [1838, 3000, exif, exif + 5, exif + 8 + 6, exif + 8 + 25] {
            let cut = file.prefix(length)
            #expect(header(cut) == .failure(truncated), "cut at \(length)")
            #expect(decode(cut) == .failure(truncated), "cut at \(length)")
            #expect(decode(cut, chunked: true) == .failure(truncated), "cut at \(length)")
        }
        let whole = try decode(try Fixtures.data("webp", "anim.webp")).get()
        #expect(decode(file) == .success(whole))
        #expect(header(file) == .success(ImageHeader(format: .webp, storedSize: whole.pixelSize, orientation: .right)))
    }

    /// Cut once its orientation entry is there, in the EXIF chunk's last bytes or in the XMP chunk, the file's
    /// displayed size is known: the header turns it, and an animation's frame 1 decodes. A still image stays
    /// `.truncated` (libwebp's one call wants every byte the RIFF size counts) with its header known, as any
    /// still image cut after its header is. Before: the header was `.truncated` for every cut inside the EXIF
    /// chunk, and so was the decoder.
    @Test func aCutAfterTheOrientationEntryIsSizedAndAnAnimationDecodes() throws {
        let whole = try decode(try Fixtures.data("webp", "anim.webp")).get()
        let truncated = ImageDecodingError(format: .webp, reason: .truncated)
        for (name, file) in [("animation", try Self.animation()), ("still", try Self.still())] {
            let exif = try Self.exifChunk(in: file)
            let size = try ImageHeader.parse(file).storedSize
            let turned = ImageHeader(format: .webp, storedSize: size, orientation: .right)
            // The orientation's value half there, then the entry whole, the TIFF structure's last bytes and
            // the XMP chunk.
            #expect(header(file.prefix(exif + 8 + 31)) == .failure(truncated), "\(name)")
            for length in [exif + 8 + 34, exif + 8 + 36, exif + 8 + 38, exif + 8 + 38 + 20, file.count - 1] {
                let cut = file.prefix(length)
                #expect(header(cut) == .success(turned), "\(name) cut at \(length)")
                let expected = name == "animation" ? Result.success(whole) : .failure(truncated)
                #expect(decode(cut) == expected, "\(name) cut at \(length)")
                #expect(decode(cut, chunked: true) == expected, "\(name) cut at \(length)")
            }
        }
    }

    /// An EXIF chunk whose IFD0 has no orientation entry says the picture is upright once the tags of IFD0's
    /// entries are there: the last one's tag takes bytes 22 and 23 of the TIFF structure.
    @Test func aCutAfterAnIFD0WithoutOrientationIsUpright() throws {
        var tiff = SyntheticHeaders.tiff(orientation: 6, bigEndian: false)
        // IFD0's second entry, at byte 22, becomes Software (0x0131) instead of Orientation.
        tiff[22] = 0x31
        tiff[23] = 0x01
        let file = try WebPAnimationExifPastTheEndTests.file(
            then: [SampleImages.WebPMetadataChunk(name: "EXIF", payload: tiff), .xmp()])
        let exif = try Self.exifChunk(in: file)
        let canvas = ImageHeader(format: .webp, storedSize: PixelSize(width: 200, height: 200))
        let truncated = ImageDecodingError(format: .webp, reason: .truncated)
        #expect(header(file.prefix(exif + 8 + 23)) == .failure(truncated))
        #expect(decode(file.prefix(exif + 8 + 23)) == .failure(truncated))
        let whole = try decode(try Fixtures.data("webp", "anim.webp")).get()
        for length in [exif + 8 + 24, exif + 8 + 34, exif + 8 + 38, file.count] {
            #expect(header(file.prefix(length)) == .success(canvas), "cut at \(length)")
            #expect(decode(file.prefix(length)) == .success(whole), "cut at \(length)")
        }
    }

    /// Whatever the cut, a picture the decoder gives has the size the header reader answers for the same bytes,
    /// which knows the orientation to show it with.
    @Test(arguments: ["animation", "still"])
    func everyCutThatDecodesHasAHeader(name: String) throws {
        let file = try name == "animation" ? Self.animation() : Self.still()
        let exif = try Self.exifChunk(in: file)
        let lengths = Array(stride(from: 0, to: exif, by: 61)) + Array(exif...file.count)
        for length in lengths {
            let cut = file.prefix(length)
            for chunked in [false, true] {
                guard case .success(let bitmap) = decode(cut, chunked: chunked) else { continue }
                #expect((try? header(cut).get())?.storedSize == bitmap.pixelSize, "cut at \(length)")
            }
        }
    }
}
#endif
