#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Malformed, cut and oversized WebP files: every one ends in a typed error or a plausible bitmap, never a crash.
@Suite("WebP decoder with hostile input")
struct WebPDecoderRobustnessTests {
    let decoder = ImageDecoders.WebP()

    func decode(_ data: Data) -> Result<Bitmap, ImageDecodingError> {
        Result { () throws(ImageDecodingError) in try decoder.decode(data, context: decodingContext(.webp)) }
    }

    /// The error decoding `data` throws; `nil` when it decodes.
    func error(_ data: Data) -> ImageDecodingError? {
        decodingError { () throws(ImageDecodingError) in try decoder.decode(data, context: decodingContext(.webp)) }
    }

    @Test func emptyDataIsTruncated() {
        #expect(error(Data()) == ImageDecodingError(format: .webp, reason: .truncated))
    }

    @Test(arguments: ["test.webp", "lossy_alpha.webp", "blue-purple-pink.lossless.webp", "random_lossy.webp"])
    func everyPrefixOfAFileFailsWithAWebPErrorOrGivesTheWholeFirstFrame(name: String) throws {
        // Still images need all their bytes (libwebp checks the RIFF size); an animation's prefix that holds
        // all of frame 1 decodes to it.
        let data = try Fixtures.data("webp", name)
        let full = try decode(data).get()
        var failures: [ImageDecodingError] = []
        for length in stride(from: 0, to: data.count, by: 13) {
            switch decode(data.prefix(length)) {
            case .success(let bitmap):
                #expect(name == "random_lossy.webp" && bitmap == full, "prefix of \(length) bytes")
            case .failure(let error):
                #expect(error.format == .webp, "prefix of \(length) bytes")
                failures.append(error)
            }
        }
        #expect(failures.filter { $0.reason == .truncated }.count > failures.count / 2)
    }

    @Test(arguments: ["test.webp", "blue-purple-pink.lossless.webp", "yellow_rose.lossy-with-alpha.webp"])
    func aStillImageCutInHalfIsTruncated(name: String) throws {
        let data = try Fixtures.data("webp", name)
        #expect(error(data.prefix(data.count / 2)) == ImageDecodingError(format: .webp, reason: .truncated))
    }

    @Test func anAnimationCutInsideItsFirstFrameIsTruncated() throws {
        // anim.webp holds six frames; frame 1's ANMF chunk runs from byte 44 for 1794 bytes.
        let data = try Fixtures.data("webp", "anim.webp")
        #expect(error(data.prefix(1000)) == ImageDecodingError(format: .webp, reason: .truncated))
    }

    @Test func randomBytesBehindAWebPSignatureFailWithAWebPError() {
        var generator = SeededGenerator(seed: 1_2_4)
        let chunkNames = ["VP8 ", "VP8L", "VP8X", "ANIM", "ALPH", "ABCD"]
        for round in 0..<300 {
            let body = generator.bytes(Int.random(in: 1...4096, using: &generator))
            // Half the rounds name a real first chunk with a size that fits, to get past the container checks.
            let chunk: [UInt8] =
                round.isMultiple(of: 2)
                ? Array(chunkNames[round / 2 % chunkNames.count].utf8) + littleEndian32(body.count) : []
            let payload = Array("WEBP".utf8) + chunk + body
            let data = Data(Array("RIFF".utf8) + littleEndian32(payload.count) + payload)
            if let error = error(data) { #expect(error.format == .webp) }
        }
    }

    @Test(arguments: ["anim.webp", "lossy_alpha.webp", "yellow_rose.lossless.webp", "test.webp"])
    func flippedBytesInARealFileGiveAWebPErrorOrABitmapOfTheSizeTheHeaderDeclares(name: String) throws {
        let original = try Fixtures.data("webp", name)
        var generator = SeededGenerator(seed: UInt64(original.count))
        // Bytes from 12 on: after the RIFF signature and size and the WEBP tag.
        for data in generator.mutations(of: original, count: 150, from: 12) {
            switch decode(data) {
            case .success(let bitmap):
                #expect(bitmap.pixelSize == (try? ImageHeader.parse(data))?.storedSize)
            case .failure(let error):
                #expect(error.format == .webp)
            }
        }
    }

    @Test func aLosslessHeaderClaiming16384By16384IsRefusedByTheBudget() throws {
        // The largest size VP8L can state: two 14-bit fields holding width - 1 and height - 1, after the 0x2F
        // signature byte at offset 20. 268 million pixels is past the default budget of 64 Mi.
        var data = try Fixtures.data("webp", "blue-purple-pink.lossless.webp")
        let flags = data[24] & 0xF0  // alpha hint and version, kept
        data.replaceSubrange(21..<25, with: [0xFF, 0xFF, 0xFF, 0x0F | flags])
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 16384, height: 16384))
        let reason = ImageDecodingError.Reason.pixelBudgetExceeded(
            pixels: 16384 * 16384, budget: ImageDecodingContext.defaultPixelBudget)
        #expect(error(data) == ImageDecodingError(format: .webp, reason: reason))
    }

    @Test func aStillImageWhoseCanvasDisagreesWithItsBitstreamIsCorrupt() throws {
        // lossy_alpha.webp is VP8X + ALPH + VP8; a 30000x30000 canvas around its 100x100 frame is refused by
        // libwebp before any size is trusted.
        var data = try Fixtures.data("webp", "lossy_alpha.webp")
        data.replaceSubrange(24..<30, with: [0x2F, 0x75, 0x00, 0x2F, 0x75, 0x00])
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 30000, height: 30000))
        #expect(error(data) == ImageDecodingError(format: .webp, reason: .corrupt("VP8_STATUS_BITSTREAM_ERROR")))
    }

    private func littleEndian32(_ value: Int) -> [UInt8] { [0, 8, 16, 24].map { UInt8(value >> $0 & 0xFF) } }
}
#endif
