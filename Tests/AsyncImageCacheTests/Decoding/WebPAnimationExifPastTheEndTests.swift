#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// An animated WebP whose EXIF or XMP chunk, after the frames, declares more bytes than its RIFF size leaves it.
/// The header reader ignores such an EXIF chunk and answers the canvas size (see `WebPExifPastTheEndTests`), and
/// never reads XMP; libwebp's demuxer refuses the whole file for either, and the decoder gives frame 1 from the
/// chunks before it.
@Suite("Animated WebP with an EXIF or XMP chunk past the RIFF size")
struct WebPAnimationExifPastTheEndTests {
    /// anim.webp (six frames of 200x200) with the EXIF flag set and an EXIF chunk after its frames that holds a
    /// TIFF structure saying orientation 6 but declares `missingBytes` more than it holds. The RIFF size counts
    /// the bytes there are, or with `riffCountsMissingBytes` the ones declared too.
    static func file(missingBytes: Int, riffCountsMissingBytes: Bool = false) throws -> Data {
        try file(then: [.exif(missingBytes: missingBytes)], riffCountsMissingBytes: riffCountsMissingBytes)
    }

    /// anim.webp with the `metadata` chunks after its frames, and the VP8X flags for them set.
    static func file(
        then metadata: [SampleImages.WebPMetadataChunk], riffCountsMissingBytes: Bool = false
    ) throws -> Data {
        var animation = try Fixtures.data("webp", "anim.webp")
        // The VP8X chunk's flags come first in its payload, at byte 20; 0x08 is EXIF, 0x04 XMP.
        if metadata.contains(where: { $0.name == "EXIF" }) { animation[20] |= 0x08 }
        if metadata.contains(where: { $0.name == "XMP " }) { animation[20] |= 0x04 }
        return SampleImages.webp(
            chunks: [UInt8](animation.dropFirst(12)), then: metadata, riffCountsMissingBytes: riffCountsMissingBytes)
    }

    func decode(_ data: Data, minimumSize: PixelSize? = nil, chunked: Bool = false)
        -> Result<Bitmap, ImageDecodingError>
    {
        var context = decodingContext(.webp, minimumSize: minimumSize)
        // As a store decodes: through the incremental decoder, 256 bytes at a time.
        if chunked { context.cancellation = DecodeCancellation() }
        let decoder = ImageDecoders.WebP(chunkSize: chunked ? 256 : nil)
        return Result { () throws(ImageDecodingError) in try decoder.decode(data, context: context) }
    }

    /// Before: every such file threw `.corrupt("WebPDemux: parse error")` while its header gave the canvas size.
    @Test(arguments: [1, 2, 64, 1 << 20])
    func anExifChunkThatRunsPastTheRIFFSizeIsIgnoredAndFrameOneDecodes(missingBytes: Int) throws {
        let intact = try Fixtures.data("webp", "anim.webp")
        let data = try Self.file(missingBytes: missingBytes)
        #expect(
            try ImageHeader.parse(data) == ImageHeader(format: .webp, storedSize: PixelSize(width: 200, height: 200)))
        let expected = try decode(intact).get()
        #expect(expected.pixelSize == PixelSize(width: 200, height: 200))
        #expect(decode(data) == .success(expected))
        #expect(decode(data, chunked: true) == .success(expected))
        let half = PixelSize(width: 100, height: 100)
        #expect(decode(data, minimumSize: half) == decode(intact, minimumSize: half))
        // Bytes after the RIFF size belong to no chunk: the same file with some behind it decodes alike.
        #expect(decode(data + Data(repeating: 0xAB, count: 10)) == .success(expected))
    }

    /// An XMP chunk, the one the format puts after EXIF, that runs past the RIFF size is ignored as an EXIF
    /// chunk is: alone, after a whole EXIF chunk (which turns the header) and after one that runs past itself.
    /// Before: the first two threw `.corrupt("WebPDemux: parse error")` (with their header giving the canvas).
    @Test(arguments: [1, 2, 64, 1 << 20])
    func anXMPChunkThatRunsPastTheRIFFSizeIsIgnoredAsAnExifChunkIs(missingBytes: Int) throws {
        let expected = try decode(try Fixtures.data("webp", "anim.webp")).get()
        let canvas = PixelSize(width: 200, height: 200)
        // An EXIF chunk before a whole XMP chunk runs past the RIFF size when it declares the XMP chunk too.
        let xmp = SampleImages.WebPMetadataChunk.xmp()
        let xmpChunkBytes = 8 + (xmp.payload.count + 1) / 2 * 2
        let files: [(metadata: [SampleImages.WebPMetadataChunk], orientation: ImageOrientation)] = [
            ([.xmp(missingBytes: missingBytes)], .up),
            ([.exif(), .xmp(missingBytes: missingBytes)], .right),
            ([.exif(missingBytes: xmpChunkBytes + missingBytes), xmp], .up),
        ]
        for (metadata, orientation) in files {
            let data = try Self.file(then: metadata)
            let names = metadata.map { "\($0.name) missing \($0.missingBytes)" }
            #expect(
                try ImageHeader.parse(data) == ImageHeader(format: .webp, storedSize: canvas, orientation: orientation),
                "\(names)")
            #expect(decode(data) == .success(expected), "\(names)")
            #expect(decode(data, chunked: true) == .success(expected), "\(names)")
        }
    }

    /// Only metadata, which nothing here reads, is left out: any other chunk past the RIFF size, a frame above
    /// all, still makes the demuxer refuse the file, as before.
    @Test func anotherChunkThatRunsPastTheRIFFSizeStillFails() throws {
        let animation = try Fixtures.data("webp", "anim.webp")
        // Frame 1's ANMF chunk runs from byte 44 for 1794 bytes: the same frame again, declaring 64 more.
        let frame = [UInt8](animation[52..<(52 + 1794)])
        let parseError = ImageDecodingError(format: .webp, reason: .corrupt("WebPDemux: parse error"))
        for chunk in [
            SampleImages.WebPMetadataChunk(name: "ANMF", payload: frame, missingBytes: 64),
            SampleImages.WebPMetadataChunk(name: "ABCD", payload: [1, 2, 3, 4], missingBytes: 64),
        ] {
            let data = try Self.file(then: [chunk])
            #expect(decode(data) == .failure(parseError), "\(chunk.name)")
            #expect(decode(data, chunked: true) == .failure(parseError), "\(chunk.name)")
        }
    }

    /// The same chunk whole is read by the demuxer without complaint, as before, and turns the header.
    @Test func aWholeExifChunkDecodesAsBefore() throws {
        let data = try Self.file(missingBytes: 0)
        #expect(try ImageHeader.parse(data).orientation == .right)
        #expect(decode(data) == decode(try Fixtures.data("webp", "anim.webp")))
    }

    /// Frame data that is not whole still fails as it did: cut inside frame 1 the file is `.truncated`, and
    /// with frame 1's image chunk declaring more bytes than its ANMF chunk holds the demuxer still refuses it,
    /// whether or not the broken EXIF chunk follows.
    @Test func aFileWhoseFrameDataIsCutStillFails() throws {
        let data = try Self.file(missingBytes: 64)
        let truncated = ImageDecodingError(format: .webp, reason: .truncated)
        // Frame 1's ANMF chunk runs from byte 44 for 1794 bytes.
        for length in [100, 1000, 1800] {
            #expect(decode(data.prefix(length)) == .failure(truncated), "prefix of \(length) bytes")
        }
        // Frame 1's VP8 chunk, its last chunk, at byte 1052, declares 778 bytes; make it declare 1000.
        func longerFrameChunk(_ file: Data) -> Data {
            var file = file
            file.replaceSubrange(1056..<1060, with: [0xE8, 0x03, 0x00, 0x00])
            return file
        }
        let parseError = ImageDecodingError(format: .webp, reason: .corrupt("WebPDemux: parse error"))
        #expect(decode(longerFrameChunk(try Fixtures.data("webp", "anim.webp"))) == .failure(parseError))
        #expect(decode(longerFrameChunk(data)) == .failure(parseError))
    }
}
#endif
