#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Photos whose EXIF orientation turns or mirrors them come out of a real store upright, as thumbnails and at
/// full size. Each `Landscape_N.jpg` / `Portrait_N.jpg` (Fixtures/exif-orientation) holds the same photo stored
/// so that orientation N shows it like `*_1.jpg`, which is stored upright.
@Suite("EXIF orientation from file to delivered image")
struct ImageStoreOrientationTests {
    static let names = (0...8).flatMap { ["Landscape_\($0).jpg", "Portrait_\($0).jpg"] }

    /// What a mistake would deliver instead: the upright photo turned half round or mirrored either way.
    static let wrongTurns: [ImageOrientation] = [.down, .upMirrored, .downMirrored]

    let root = TemporaryDirectory("orientation")

    /// The image a store delivers for `name` at `width` (natural size when `nil`).
    func delivered(_ name: String, width: CGFloat?) async throws -> Bitmap {
        let store = try ImageStore.makeForTesting(root: root.url)
        return try await store.image(for: ImageRequest(url: Fixtures.url("exif-orientation", name), targetWidth: width))
    }

    /// The upright twin of `name`: the orientation-1 file of the same photo.
    static func twin(of name: String) -> String { name.hasPrefix("Landscape") ? "Landscape_1.jpg" : "Portrait_1.jpg" }

    @Test(arguments: names)
    func aThumbnailComesOutUpright(name: String) async throws {
        let image = try await delivered(name, width: 180)
        let upright = try await delivered(Self.twin(of: name), width: 180)
        let size = name.hasPrefix("Landscape") ? PixelSize(width: 180, height: 120) : PixelSize(width: 180, height: 270)
        #expect(image.pixelSize == size)
        try expectUpright(image, twin: upright, pixelStride: 1)
    }

    @Test(arguments: names)
    func theFullSizeImageComesOutUpright(name: String) async throws {
        let image = try await delivered(name, width: nil)
        let upright = try await delivered(Self.twin(of: name), width: nil)
        let size =
            name.hasPrefix("Landscape") ? PixelSize(width: 1800, height: 1200) : PixelSize(width: 1200, height: 1800)
        #expect(image.pixelSize == size)
        // Every 7th pixel (7 is prime to both sides, so every column is sampled) keeps the unoptimised test fast.
        try expectUpright(image, twin: upright, pixelStride: 7)
    }

    /// `image` is close to its upright `twin` and far from every wrong turn of the twin, so the comparison could
    /// tell a mistake. Each file is its own JPEG encode, so not equal: measured, the right turn is at most 4 off
    /// (of 255, on average) and every wrong one at least 39.
    func expectUpright(_ image: Bitmap, twin: Bitmap, pixelStride: Int) throws {
        try #require(image.pixelSize == twin.pixelSize)
        #expect(image.meanColorDifference(from: twin, pixelStride: pixelStride) < 6)
        for wrong in Self.wrongTurns {
            #expect(
                image.meanColorDifference(from: twin.oriented(wrong), pixelStride: pixelStride) > 24, "as if \(wrong)")
        }
    }
}
#endif
