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
}
#endif
