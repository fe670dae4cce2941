#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// WebP and GIF files load through a store with its default configuration like JPEG and PNG do.
@Suite("WebP and GIF through the store")
struct ImageStoreFormatTests {
    let root = TemporaryDirectory("formats")

    func load(_ folder: String, _ name: String, width: CGFloat? = nil) async throws -> Bitmap {
        let store = try ImageStore.makeForTesting(root: root.url)
        return try await store.image(for: ImageRequest(url: Fixtures.url(folder, name), targetWidth: width))
    }

    @Test(arguments: [
        ("webp", "yellow_rose.lossy.webp"), ("webp", "yellow_rose.lossless.webp"), ("webp", "anim.webp"),
        ("gif", "interlaced.gif"), ("gif", "large-gif-anim-combine.gif"),
    ])
    func aThumbnailHasTheTargetWidthAndTheAspectRatioOfTheHeader(folder: String, name: String) async throws {
        let header = try ImageHeader.parse(try Fixtures.data(folder, name))
        let image = try await load(folder, name, width: 100)
        let height = (Double(header.storedSize.height) * 100 / Double(header.storedSize.width)).rounded()
        #expect(image.pixelSize == PixelSize(width: 100, height: Int(height)))
    }

    @Test(arguments: [("webp", "lossy_alpha.webp"), ("gif", "beacon.gif"), ("gif", "alpha_gif_a.gif")])
    func theNaturalSizeIsTheDecodersFirstFrame(folder: String, name: String) async throws {
        let data = try Fixtures.data(folder, name)
        let expected = try ImageDecoders.Default().decode(
            data, context: ImageDecodingContext(header: ImageHeader.parse(data)))
        #expect(try await load(folder, name) == expected)
    }
}
#endif
