#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

extension PhotoPipelineTests {
    /// Transparency through the whole store: resampled edges and rounded corners as a user gets them.
    @Suite("Alpha edges and rounded corners through the store")
    struct AlphaAndCornersPipelineTests {
        /// A white disc and a one-pixel white line on a fully transparent *black* background: resampling
        /// straight alpha would mix that black into every edge pixel.
        static func whiteShapeOnTransparentBlack() -> Bitmap {
            Bitmap.drawing(width: 301, height: 203) { x, y in
                let dx = Double(x) - 150.3
                let dy = Double(y) - 101.7
                let inDisc = dx * dx + dy * dy <= 70 * 70
                let onLine = x == 20 && y >= 10 && y < 190
                return inDisc || onLine ? (255, 255, 255, 255) : (0, 0, 0, 0)
            }
        }

        /// Loads `bitmap` as a PNG file through a fresh store.
        static func load(_ bitmap: Bitmap, targetWidth: Int, cornerRadius: Int) async throws -> Bitmap {
            let folder = TemporaryDirectory("alpha")
            let url = folder.url.appendingPathComponent("shape.png")
            try ImageEncoders.PNG().encode(bitmap).write(to: url)
            let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
            let request = ImageRequest(url: url, targetWidth: CGFloat(targetWidth), cornerRadius: CGFloat(cornerRadius))
            return try await store.image(for: request)
        }

        @Test(arguments: [0, 24])
        func aWhiteShapeOnTransparentBlackGetsNoDarkFringe(cornerRadius: Int) async throws {
            let shape = Self.whiteShapeOnTransparentBlack()
            let image = try await Self.load(shape, targetWidth: 97, cornerRadius: cornerRadius)
            #expect(image.pixelSize == PixelSize(width: 97, height: 65))
            var edgePixels = 0
            var darkest: UInt8 = 255
            for y in 0..<image.height {
                for x in 0..<image.width {
                    let pixel = image.pixel(x: x, y: y)
                    guard pixel.alpha > 0 else { continue }
                    if pixel.alpha < 255 { edgePixels += 1 }
                    darkest = min(darkest, pixel.red, pixel.green, pixel.blue)
                }
            }
            // The disc's rim and the thinned line are translucent; every one of them is still white.
            #expect(edgePixels > 50)
            #expect(darkest >= 253, "darkest visible sample \(darkest)")
        }

        /// An opaque photo at 320x213, so every corner starts fully opaque.
        static func photo(cornerRadius: Int) async throws -> Bitmap {
            let folder = TemporaryDirectory("corners")
            let store = try ImageStore.makeForTesting(root: folder.url)
            let url = Fixtures.url("exif-orientation", "Landscape_1.jpg")
            let request = ImageRequest(url: url, targetWidth: 320, cornerRadius: CGFloat(cornerRadius))
            return try await store.image(for: request)
        }

        @Test(arguments: [3, 8, 40])
        func cornerPixelsAreTransparentTheCentreOpaqueAndTheArcAntiAliased(radius: Int) async throws {
            let image = try await Self.photo(cornerRadius: radius)
            #expect(image.pixelSize == PixelSize(width: 320, height: 213))
            let (right, bottom) = (image.width - 1, image.height - 1)
            for (x, y) in [(0, 0), (right, 0), (0, bottom), (right, bottom)] {
                #expect(image.pixel(x: x, y: y).alpha == 0, "corner (\(x), \(y))")
            }
            #expect(image.pixel(x: image.width / 2, y: image.height / 2).alpha == 255)
            #expect(image.pixel(x: radius, y: 0).alpha == 255, "the straight edge after the arc")
            // Anti-aliased: along the arc some pixels are partly covered, not only 0 or 255.
            let cornerAlphas = (0..<radius).flatMap { y in (0..<radius).map { x in image.pixel(x: x, y: y).alpha } }
            #expect(cornerAlphas.contains { $0 > 0 && $0 < 255 })
        }

        @Test func aHugeRadiusIsClampedToHalfTheShorterSide() async throws {
            let clamped = try await Self.photo(cornerRadius: 10_000)
            // Half of 213 is 106.5: clamped there, a radius of 107 is too, and one of 106 is not.
            #expect(clamped == (try await Self.photo(cornerRadius: 107)))
            #expect(clamped != (try await Self.photo(cornerRadius: 106)))
            // Half the height: the left and right ends are half circles, so the middle of each end is opaque
            // and the top edge is transparent except in its middle.
            #expect(clamped.pixel(x: 0, y: 106).alpha == 255)
            #expect(clamped.pixel(x: 319, y: 106).alpha == 255)
            #expect(clamped.pixel(x: 50, y: 0).alpha == 0)
            #expect(clamped.pixel(x: 160, y: 0).alpha == 255)
        }
    }
}
#endif
