#if os(Linux)
import CHEIF
import Foundation
import Testing

@testable import AsyncImageCache

/// HEIF applies an item's `irot` and `imir` in the order they are associated with it (ISO/IEC 23008-12
/// 6.3). MIAF asks writers to rotate first, but a HEIF file may mirror first, which gives another picture:
/// the header's orientation must be the one libheif applies.
@Suite("HEIF irot and imir order")
struct HEIFTransformOrderTests {
    /// rotated-6.heic (96x64 coded, properties hvcC, irot, ispe, pixi) with `quarterTurns` in its irot, its
    /// pixi replaced in place by an imir of `axis` (padded to the pixi's 16 bytes), and the item's
    /// associations hvcC, ispe, then irot and imir in that order or, `mirrorFirst`, the other.
    static func file(quarterTurns: UInt8, axis: UInt8, mirrorFirst: Bool) throws -> Data {
        var bytes = [UInt8](try Fixtures.data("heif", "rotated-6.heic"))
        func offset(of pattern: [UInt8]) throws -> Int { try #require(bytes.offset(of: pattern)) }
        let irot = try offset(of: [0, 0, 0, 9] + Array("irot".utf8))
        bytes[irot + 8] = quarterTurns
        let pixi = try offset(of: [0, 0, 0, 16] + Array("pixi".utf8))
        bytes.replaceSubrange(
            pixi..<(pixi + 16), with: [0, 0, 0, 16] + Array("imir".utf8) + [axis] + [UInt8](repeating: 0, count: 7))
        // Item 1's four associations: hvcC (1), irot (2), ispe (3), pixi (4, now imir); the top bit: essential.
        let entry = try offset(of: [0, 1, 4, 0x81, 0x02, 0x03, 0x84])
        let transforms: [UInt8] = mirrorFirst ? [0x84, 0x82] : [0x82, 0x84]
        bytes.replaceSubrange((entry + 3)..<(entry + 7), with: [0x81, 0x03] + transforms)
        return Data(bytes)
    }

    /// The primary image of `data` as libheif shows it, its transformations applied.
    static func libheifDisplayed(_ data: Data) throws -> Bitmap {
        let context = try #require(heif_context_alloc())
        defer { heif_context_free(context) }
        return try data.withUnsafeBytes { raw throws -> Bitmap in
            #expect(
                heif_context_read_from_memory_without_copy(context, raw.baseAddress, raw.count, nil).code
                    == heif_error_Ok)
            var handle: OpaquePointer?
            #expect(heif_context_get_primary_image_handle(context, &handle).code == heif_error_Ok)
            let primary = try #require(handle)
            defer { heif_image_handle_release(primary) }
            var image: OpaquePointer?
            let decoded = heif_decode_image(primary, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, nil)
            #expect(decoded.code == heif_error_Ok)
            let picture = try #require(image)
            defer { heif_image_release(picture) }
            let (width, height) = (
                Int(heif_image_get_primary_width(picture)), Int(heif_image_get_primary_height(picture))
            )
            var stride: Int32 = 0
            let plane = try #require(heif_image_get_plane_readonly(picture, heif_channel_interleaved, &stride))
            var pixels: [UInt8] = []
            for row in 0..<height {
                pixels += UnsafeBufferPointer(start: plane + row * Int(stride), count: width * 4)
            }
            return Bitmap(width: width, height: height, pixels: pixels)
        }
    }

    @Test(arguments: [1, 3] as [UInt8], [0, 1] as [UInt8])
    func theOrientationIsTheTransformsInTheirOrder(quarterTurns: UInt8, axis: UInt8) throws {
        for mirrorFirst in [false, true] {
            let data = try Self.file(quarterTurns: quarterTurns, axis: axis, mirrorFirst: mirrorFirst)
            let header = try ImageHeader.parse(data)
            let stored = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            let expected = try Self.libheifDisplayed(data)
            #expect(
                stored.oriented(header.orientation) == expected,
                "irot \(quarterTurns), imir \(axis), \(mirrorFirst ? "mirror" : "rotation") first: \(header.orientation)"
            )
        }
    }

    @Test func aMirrorThenAQuarterTurnIsNotTheQuarterTurnThenTheMirror() throws {
        // Top and bottom exchanged, then a quarter turn anticlockwise: the transverse (EXIF 7), where the
        // turn then the mirror is the transpose (EXIF 5).
        let mirrorFirst = try ImageHeader.parse(try Self.file(quarterTurns: 1, axis: 0, mirrorFirst: true))
        let rotationFirst = try ImageHeader.parse(try Self.file(quarterTurns: 1, axis: 0, mirrorFirst: false))
        #expect(mirrorFirst.orientation == .rightMirrored)
        #expect(rotationFirst.orientation == .leftMirrored)
    }
}
#endif
