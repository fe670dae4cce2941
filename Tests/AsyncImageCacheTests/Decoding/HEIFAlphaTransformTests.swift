#if os(Linux)
import CHEIF
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

    /// libheif's own decode of `data` to 8-bit interleaved RGBA, its transformations ignored: what the
    /// decoder asked of it before it read planes.
    static func libheifRGBA(_ data: Data) throws -> [UInt8] {
        let context = try #require(heif_context_alloc())
        defer { heif_context_free(context) }
        return try data.withUnsafeBytes { bytes in
            try #require(
                heif_context_read_from_memory_without_copy(context, bytes.baseAddress, bytes.count, nil).code
                    == heif_error_Ok)
            var handle: OpaquePointer?
            try #require(heif_context_get_primary_image_handle(context, &handle).code == heif_error_Ok)
            defer { heif_image_handle_release(handle) }
            let options = try #require(heif_decoding_options_alloc())
            defer { heif_decoding_options_free(options) }
            options.pointee.ignore_transformations = 1
            options.pointee.convert_hdr_to_8bit = 1
            var image: OpaquePointer?
            try #require(
                heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, options).code
                    == heif_error_Ok)
            defer { heif_image_release(image) }
            var stride: Int32 = 0
            let plane = try #require(heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride))
            let (width, height) = (Int(heif_image_get_primary_width(image)), Int(heif_image_get_primary_height(image)))
            return (0..<height).flatMap { row in
                Array(UnsafeBufferPointer(start: plane + row * Int(stride), count: width * 4))
            }
        }
    }

    /// Ten bits a sample: read by their top eight, as libheif's own conversion to 8 bits gives them (libheif 1.15's
    /// to interleaved RGBA, which leaves the planes the decoder asks for at 10 bits; libheif 1.23's to those planes,
    /// where its interleaved RGBA rounds otherwise: ``HEIFLibrary/convertsInterleavedRGBOtherwiseThanPlanes``).
    /// Turned on both items, the same stored pixels (before: "Unsupported color conversion").
    @Test func tenBitSamplesWithAnAlphaTurnedAsItsColour() throws {
        let upright = try Self.decoded("alpha-10-bit.heic")
        #expect(upright.pixelSize == PixelSize(width: 96, height: 64))
        let data = try Fixtures.data("heif", "alpha-10-bit.heic")
        let topEightBits = try HEIFTransformOrderTests.libheifPlanes(data, transformed: false, eightBit: false)
        #expect(upright == topEightBits, "not the top 8 bits of libheif's 10-bit samples")
        let libheifEightBit =
            HEIFLibrary.convertsInterleavedRGBOtherwiseThanPlanes
            ? try HEIFTransformOrderTests.libheifPlanes(data, transformed: false, eightBit: true).pixels
            : try Self.libheifRGBA(data)
        let asLibheif = upright.pixels == libheifEightBit
        #expect(asLibheif, "not the pixels of libheif's conversion to 8 bits")
        #expect(Set(upright.alphaValues).count > 50)
        let turned = try Fixtures.data("heif", "alpha-10-bit-rotated-6.heic")
        #expect(try ImageHeader.parse(turned).orientation == .right)
        let same = try Self.decoded("alpha-10-bit-rotated-6.heic").pixels == upright.pixels
        #expect(same, "the turned file's stored pixels are not the upright one's")
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
