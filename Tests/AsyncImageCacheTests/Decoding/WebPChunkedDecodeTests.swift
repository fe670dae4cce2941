#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A WebP decode that can be cancelled (every decode in a store) goes through libwebp's incremental decoder a
/// chunk of bytes at a time; it gives what libwebp's one call gives without a cancellation: the same pixels
/// and the same errors, whatever the chunks, for any file an encoder wrote (a damaged lossy file can differ
/// in colour only).
@Suite("WebP decoder in chunks", .ownThreads)
struct WebPChunkedDecodeTests {
    /// The chunk sizes tried: the decoder's own, and small ones that stop and resume libwebp many times.
    static let chunkSizes: [Int?] = [nil, 97, 1000, 4096]

    /// libwebp's one call: a context without a cancellation, as before chunks.
    func oneCall(_ data: Data, minimumSize: PixelSize? = nil) -> Result<Bitmap, ImageDecodingError> {
        Result { () throws(ImageDecodingError) in
            try ImageDecoders.WebP().decode(data, context: decodingContext(.webp, minimumSize: minimumSize))
        }
    }

    /// In chunks of `chunkSize` bytes, with a cancellation that is never raised.
    func inChunks(_ data: Data, minimumSize: PixelSize? = nil, chunkSize: Int?) -> Result<Bitmap, ImageDecodingError> {
        var context = decodingContext(.webp, minimumSize: minimumSize)
        context.cancellation = DecodeCancellation()
        return Result { () throws(ImageDecodingError) in
            try ImageDecoders.WebP(chunkSize: chunkSize).decode(data, context: context)
        }
    }

    /// Checks that every chunk size gives the one call's outcome for `data`, which must decode.
    func expectSamePixels(
        _ data: Data, minimumSize: PixelSize? = nil, _ comment: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let reference = try oneCall(data, minimumSize: minimumSize).get()
        for chunkSize in Self.chunkSizes {
            let chunked = inChunks(data, minimumSize: minimumSize, chunkSize: chunkSize)
            #expect(
                (try? chunked.get()) == reference, "\(comment), chunks of \(chunkSize.map(String.init) ?? "default")",
                sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: WebPDecoderTests.corpus)
    func everyFixtureDecodesToTheSamePixelsInChunks(name: String) throws {
        let data = try Fixtures.data("webp", name)
        for minimumSize in [nil, PixelSize(width: 60, height: 40)] {
            try expectSamePixels(data, minimumSize: minimumSize, "\(name) at \(String(describing: minimumSize))")
        }
    }

    /// Files of many default chunks: lossy, lossless and lossy with alpha, whole and scaled.
    @Test func largeFilesDecodeToTheSamePixelsInChunks() throws {
        let picture = SampleImages.detailed(width: 1200, height: 800)
        let files = [
            ("lossy", SampleImages.webp(picture, quality: 80)),
            ("lossless", SampleImages.webp(picture, quality: nil)),
            ("lossy with alpha", SampleImages.webp(SampleImages.detailed(width: 1200, height: 800, alpha: true))),
        ]
        for (kind, data) in files {
            #expect(data.count > 2 * ImageDecoders.WebP.chunkSize(for: data.count), "\(kind): \(data.count) bytes")
            for minimumSize in [nil, PixelSize(width: 300, height: 200)] {
                try expectSamePixels(data, minimumSize: minimumSize, "\(kind) at \(String(describing: minimumSize))")
            }
        }
    }

    /// The first frame of an animation, moved to an offset on a larger canvas, whole and scaled.
    @Test func theFirstFrameAtAnOffsetDecodesToTheSamePixelsInChunks() throws {
        let data = try WebPDecoderAnimationTests.anim(canvasWidth: 400, height: 300, firstFrameAt: 100, 50)
        for minimumSize in [nil, PixelSize(width: 150, height: 100)] {
            try expectSamePixels(data, minimumSize: minimumSize, "anim at \(String(describing: minimumSize))")
        }
    }

    /// Cut anywhere, or with bytes replaced, a file fails in chunks as it fails in one call (`.truncated` where
    /// that was, `.corrupt` with the same libwebp status), or decodes to the same pixels.
    @Test(arguments: [
        "test.webp", "lossy_alpha.webp", "blue-purple-pink.lossless.webp", "yellow_rose.lossy-with-alpha.webp",
        "anim.webp", "random_lossy.webp",
    ])
    func aCutOrDamagedFileEndsInChunksAsInOneCall(name: String) throws {
        let data = try Fixtures.data("webp", name)
        var generator = SeededGenerator(seed: 2_024)
        let cuts = stride(from: 0, to: data.count, by: max(1, data.count / 120)).map { data.prefix($0) }
        let damaged = generator.mutations(of: data, count: 120, from: 12)
        var failures: Set<String> = []
        for (index, variant) in (cuts + damaged).enumerated() {
            let reference = oneCall(variant)
            if case .failure(let error) = reference { failures.insert("\(error.reason)") }
            for chunkSize in [nil, 257] {
                #expect(inChunks(variant, chunkSize: chunkSize) == reference, "variant \(index) of \(name)")
            }
        }
        // The variants fail in more than one way: cut short, and damaged in libwebp's eyes.
        #expect(failures.count > 1, "\(failures)")
    }

    /// Sizes that claim more bytes than the file has, where libwebp's one call looks before it decodes: a RIFF
    /// size 2 bytes too large, and a VP8L chunk without its RIFF container (which libwebp reads) 2 bytes larger
    /// than the bytes after it. Both are `.truncated` in one call; libwebp's incremental decoder alone would
    /// decode them, as their image data is whole.
    @Test func sizesThatClaimMissingBytesAreTruncatedInChunksToo() throws {
        var riff = try Fixtures.data("webp", "yellow_rose.lossy.webp")
        let riffSize = riff[4..<8].reversed().reduce(0) { $0 << 8 | Int($1) }
        riff.replaceSubrange(4..<8, with: littleEndian32(riffSize + 2))
        var bare = try Fixtures.data("webp", "yellow_rose.lossless.webp").dropFirst(12)
        #expect(bare.prefix(4).elementsEqual("VP8L".utf8))
        bare.replaceSubrange(bare.startIndex + 4..<bare.startIndex + 8, with: littleEndian32(bare.count - 8 + 2))
        let truncated = ImageDecodingError(format: .webp, reason: .truncated)
        for (kind, data) in [("RIFF size", riff), ("VP8L chunk size", Data(bare))] {
            #expect(oneCall(data) == .failure(truncated), "\(kind) in one call")
            for chunkSize in Self.chunkSizes {
                #expect(inChunks(data, chunkSize: chunkSize) == .failure(truncated), "\(kind) in chunks")
            }
        }
        // Told the right size, the bare chunk decodes.
        bare.replaceSubrange(bare.startIndex + 4..<bare.startIndex + 8, with: littleEndian32(bare.count - 8))
        #expect(try inChunks(Data(bare), chunkSize: nil).get() == oneCall(Data(bare)).get())
    }

    /// A lossy file damaged so its arithmetic coding is out of range (its token partition begins ff ff ff,
    /// which no VP8 encoder writes): libwebp decodes it without an error but gives colour that depends on where
    /// the bytes were cut. Every cut still decodes, to the one call's size and alpha.
    @Test func aLossyFileCodedOutOfRangeDecodesInChunksToTheOneCallsSizeAndAlpha() throws {
        let data = try Fixtures.data("fuzz-regressions", "webp-lossy-coded-out-of-range.webp")
        let reference = try oneCall(data).get()
        #expect(reference.width == 100 && reference.height == 100)
        // Partition 0 ends at byte 315: chunks that hand the incremental decoder 1 to 7 bytes past it first (316
        // to 322, and 53, which reaches 318) are the cuts whose colour differs; the rest are for comparison.
        for chunkSize in [nil, 53, 97, 300, 315, 316, 319, 322, 323, 1000] {
            let chunked = try inChunks(data, chunkSize: chunkSize).get()
            let label = "chunks of \(chunkSize.map(String.init) ?? "default")"
            #expect(chunked.width == reference.width && chunked.height == reference.height, "\(label)")
            #expect(chunked.alphaChannel == reference.alphaChannel, "\(label)")
        }
    }

    private func littleEndian32(_ value: Int) -> [UInt8] { [0, 8, 16, 24].map { UInt8(value >> $0 & 0xFF) } }
}
#endif
