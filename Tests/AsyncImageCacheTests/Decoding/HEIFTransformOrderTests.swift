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

    /// The primary image of `data` as libheif shows it, its transformations applied, in 8-bit planes
    /// (``libheifPlanes(_:transformed:eightBit:)``).
    static func libheifDisplayed(_ data: Data) throws -> Bitmap {
        try libheifPlanes(data, transformed: true, eightBit: true)
    }

    /// The primary image of `data` as libheif decodes it to planes of R, G and B (and alpha, when it has one), as the
    /// decoder reads them: each sample by its top 8 bits. With `transformed`, its transformations applied, else
    /// ignored; with `eightBit`, libheif asked for 8-bit samples. Planes, not interleaved RGBA, whose conversion
    /// libheif 1.23 rounds otherwise (``HEIFLibrary/convertsInterleavedRGBOtherwiseThanPlanes``; 1.15.1 gives the
    /// same samples either way).
    static func libheifPlanes(_ data: Data, transformed: Bool, eightBit: Bool) throws -> Bitmap {
        let context = try #require(heif_context_alloc())
        defer { heif_context_free(context) }
        return try data.withUnsafeBytes { raw throws -> Bitmap in
            try #require(
                heif_context_read_from_memory_without_copy(context, raw.baseAddress, raw.count, nil).code
                    == heif_error_Ok)
            var handle: OpaquePointer?
            try #require(heif_context_get_primary_image_handle(context, &handle).code == heif_error_Ok)
            let primary = try #require(handle)
            defer { heif_image_handle_release(primary) }
            let options = try #require(heif_decoding_options_alloc())
            defer { heif_decoding_options_free(options) }
            options.pointee.ignore_transformations = transformed ? 0 : 1
            options.pointee.convert_hdr_to_8bit = eightBit ? 1 : 0
            var image: OpaquePointer?
            let decoded = heif_decode_image(primary, &image, heif_colorspace_RGB, heif_chroma_444, options)
            try #require(decoded.code == heif_error_Ok)
            let picture = try #require(image)
            defer { heif_image_release(picture) }
            let (width, height) = (
                Int(heif_image_get_width(picture, heif_channel_R)), Int(heif_image_get_height(picture, heif_channel_R))
            )
            // Each plane's first sample and stride, and the bits its samples drop to be read as 8.
            func plane(_ channel: heif_channel) throws -> (base: UnsafePointer<UInt8>, stride: Int, shift: Int)? {
                guard heif_image_has_channel(picture, channel) != 0 else { return nil }
                var stride: Int32 = 0
                let base = try #require(heif_image_get_plane_readonly(picture, channel, &stride))
                return (base, Int(stride), Int(heif_image_get_bits_per_pixel_range(picture, channel)) - 8)
            }
            let planes = try [heif_channel_R, heif_channel_G, heif_channel_B, heif_channel_Alpha].map(plane)
            var pixels: [UInt8] = []
            for y in 0..<height {
                for x in 0..<width {
                    for plane in planes {
                        guard let plane else {
                            pixels.append(255)
                            continue
                        }
                        let row = plane.base + y * plane.stride
                        let word =
                            plane.shift > 0
                            ? Int(UnsafeRawPointer(row).loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self))
                            : Int(row[x])
                        pixels.append(UInt8(word >> max(0, plane.shift)))
                    }
                }
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
