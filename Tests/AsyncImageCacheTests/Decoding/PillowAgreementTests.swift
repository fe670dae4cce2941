#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// The GIF and WebP decoders give, pixel for pixel, the first frame that Pillow gives (see ``PillowReference``),
/// for every fixture: transparency, interlacing, frames on a canvas, lossy and lossless WebP.
@Suite("GIF and WebP decoders agree with Pillow")
struct PillowAgreementTests {
    /// The animations, as Fixtures/gif/README.txt and Fixtures/webp/README.txt list them.
    static let animated = [
        "anim-gr.gif", "any-disposal.gif", "beacon.gif", "large-gif-anim-combine.gif", "mixed-disposal.gif",
        "anim.webp", "random_lossless.webp", "random_lossy.webp",
    ]

    static func decode(_ name: String) throws -> Bitmap {
        let isGIF = name.hasSuffix(".gif")
        let data = try Fixtures.data(isGIF ? "gif" : "webp", name)
        let decoder: any ImageDecoding = isGIF ? ImageDecoders.GIF() : ImageDecoders.WebP()
        return try decoder.decode(data, context: decodingContext(isGIF ? .gif : .webp))
    }

    @Test func theReferenceCoversEveryGIFAndWebPFixtureAndSecondFramesOfTheAnimations() throws {
        let fixtures =
            try Fixtures.files(in: "gif", withExtensions: ["gif"])
            + Fixtures.files(in: "webp", withExtensions: ["webp"])
        #expect(PillowReference.frames.map(\.name).sorted() == fixtures.sorted())
        let withSecondFrames = PillowReference.frames.filter { $0.secondFrameDigest != nil }.map(\.name)
        #expect(withSecondFrames.sorted() == Self.animated.sorted())
    }

    @Test(arguments: PillowReference.frames.map(\.name))
    func everyFileDecodesToThePixelsPillowGivesForItsFirstFrame(name: String) throws {
        // Lossy WebP too: VP8 decoding and libwebp's RGBA conversion are exact, and Pillow's libwebp agrees.
        let reference = try #require(PillowReference.frames(of: name))
        let bitmap = try Self.decode(name)
        #expect(bitmap.clearedDigest == reference.firstFrameDigest)
        #expect(bitmap.alphaValues.filter { $0 == 0 }.count == reference.transparentPixels)
    }

    @Test(arguments: animated)
    func anAnimationGivesItsFirstFrameAndNotItsSecond(name: String) throws {
        let reference = try #require(PillowReference.frames(of: name))
        let second = try #require(reference.secondFrameDigest)
        #expect(second != reference.firstFrameDigest)
        let digest = try Self.decode(name).clearedDigest
        #expect(digest == reference.firstFrameDigest && digest != second)
    }
}
#endif
