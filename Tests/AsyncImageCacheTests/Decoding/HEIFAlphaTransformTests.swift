#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Alpha items with an irot or clap of their own: encoders put the colour's on the alpha too (libheif,
/// given an orientation or an odd size; libavif since 2025). libheif 1.15 applies them as it decodes the
/// alpha with the colour, even with its transformations ignored, and attaches the result as it is.
/// The fixtures are alpha.avif with properties added (scripts/make-heif-alpha-variants.py): the same
/// coded data, so the same stored pixels, colour and alpha.
@Suite("HEIF alpha items with transformations of their own")
struct HEIFAlphaTransformTests {
    static func decoded(_ name: String) throws -> Bitmap {
        let data = try Fixtures.data("heif", name)
        return try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: try ImageHeader.parse(data)))
    }

    /// Before: the quarter turns failed ("Unsupported color conversion": the alpha plane came turned, 64x96),
    /// the half turn came with its alpha turned (a mean error of 129 of 255), and the turn on the colour
    /// only came opaque (libheif drops an alpha of another displayed size, and says there is none).
    @Test(arguments: ["alpha-rotated-8.avif", "alpha-rotated-3.avif", "alpha-rotated-8-colour-only.avif"])
    func anAlphaTurnedDecodesInTheColoursStoredOrientation(name: String) throws {
        let reference = try Self.decoded("alpha.avif")
        let bitmap = try Self.decoded(name)
        #expect(bitmap.pixelSize == reference.pixelSize)
        let same = bitmap.pixels == reference.pixels
        #expect(same, "\(name) decodes to other pixels than alpha.avif")
    }

    /// Before: "Unsupported color conversion" (the alpha plane came cropped, 70x40, for a 96x64 picture).
    @Test func anAlphaCroppedAsItsColourIsCroppedOnce() throws {
        let reference = try Self.decoded("alpha.avif")
        let bitmap = try Self.decoded("alpha-cropped-both.avif")
        #expect(bitmap.pixelSize == PixelSize(width: 70, height: 40))
        var expected: [UInt8] = []
        for y in 8..<48 {
            let row = (y * reference.width + 19) * 4
            expected += reference.pixels[row..<(row + 70 * 4)]
        }
        let same = bitmap.pixels == expected
        #expect(same, "the cropped decode is not alpha.avif's pixels from (19, 8)")
    }

    /// Through a store: the picture and its alpha turn together, as the colour item's irot says.
    @Test func throughAStoreTheAlphaTurnsWithThePicture() async throws {
        let folder = TemporaryDirectory("heif-alpha")
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        func loaded(_ name: String) async throws -> Bitmap {
            let file = folder.url.appendingPathComponent(name)
            try Fixtures.data("heif", name).write(to: file)
            return try await store.image(for: ImageRequest(url: file))
        }
        let upright = try await loaded("alpha.avif")
        for (name, orientation) in [
            ("alpha-rotated-8.avif", ImageOrientation.left), ("alpha-rotated-3.avif", .down),
            ("alpha-rotated-8-colour-only.avif", .left),
        ] {
            #expect(try ImageHeader.parse(Fixtures.data("heif", name)).orientation == orientation)
            let image = try await loaded(name)
            let expected = upright.oriented(orientation)
            #expect(image.pixelSize == expected.pixelSize, "\(name)")
            let same = image.pixels == expected.pixels
            #expect(same, "\(name) is not alpha.avif turned \(orientation)")
        }
    }
}
#endif
