#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// libwebp scales while it decodes by averaging areas, a box filter. Shrunk straight to a small size, a
/// picture with alpha edges comes out far from the Lanczos resize every other format gets (Pillow's too):
/// the store decodes at a few times the size and finishes with its own resize.
@Suite("Scaled WebP decodes match the resize of the full image")
struct ScaledWebPTests {
    @Test(arguments: [1, 2, 3, 7, 9, 13, 25, 50, 100, 200])
    func theStoresImageMatchesTheFullDecodesResize(width: Int) async throws {
        let folder = TemporaryDirectory("scaled-webp")
        let url = Fixtures.url("webp", "yellow_rose.lossless.webp")  // 400x301, a photo cut out on transparency
        let data = try Data(contentsOf: url)
        let full = try ImageDecoders.WebP().decode(
            data, context: ImageDecodingContext(header: try ImageHeader.parse(data)))
        let store = try ImageStore.makeForTesting(root: folder.url)
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: CGFloat(width)))
        let reference = full.resized(
            to: PixelSize(width: width, height: max(1, Int((301.0 * Double(width) / 400).rounded()))))
        try #require(image.pixelSize == reference.pixelSize)
        let alpha = image.alphaPSNR(against: reference)
        print("scaled WebP at \(width): alpha \(String(format: "%.2f", alpha)) dB")
        #expect(alpha >= 35, "alpha at \(width): \(String(format: "%.2f", alpha)) dB")
        if width >= 7 {
            let colour = image.colorPSNR(against: reference)
            print("scaled WebP at \(width): colour \(String(format: "%.2f", colour)) dB")
            #expect(colour >= 30, "colour at \(width): \(String(format: "%.2f", colour)) dB")
        }
    }

    /// Decoding at three times the size is for quality only: a WebP whose decode at the size fits the pixel
    /// budget still loads when three times the size would not (yellow_rose.lossy.webp, 400x301 lossy without
    /// alpha, shown 100 px wide decodes to 100x76, 7,600 px; at three times, 300x226 = 67,800 px).
    @Test func aWebPThatFitsTheBudgetAtItsSizeLoadsUnderThatBudget() async throws {
        let folder = TemporaryDirectory("scaled-webp-budget")
        let url = Fixtures.url("webp", "yellow_rose.lossy.webp")
        let data = try Data(contentsOf: url)
        let budget = 100 * 76
        // The decoder alone decodes it at the size under that budget.
        let direct = try ImageDecoders.WebP().decode(
            data,
            context: ImageDecodingContext(
                header: try ImageHeader.parse(data), minimumSize: PixelSize(width: 100, height: 75),
                pixelBudget: budget))
        #expect(direct.pixelSize == PixelSize(width: 100, height: 76))
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.pixelBudget = budget }
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        #expect(image.pixelSize == PixelSize(width: 100, height: 75))
    }
}
#endif
