#if os(Linux)
import CHEIF
import Foundation
import Testing

@testable import AsyncImageCache

/// An item may be associated with more than one `clap`, `irot` or `imir`. libheif 1.15.1 as Debian's security
/// update 1.15.1-1+deb12u3 ships it refuses to decode such an item ("Multiple irot, imir, or clap properties
/// associated with one item"); earlier builds applied them one after another. The header and the decoder call it
/// corrupt, whichever libheif is installed: a header that gave a size would reserve a box for an image that fails.
@Suite("HEIF items with more than one clean aperture or rotation")
struct HEIFCleanAperturesTests {
    enum Property: UInt8 {
        /// ipco's indices in the file below, with the top bit that marks a property essential where it has it.
        case hvcC = 0x81, firstClap = 0x82, irot = 0x03, ispe = 0x04, pixi = 0x85, secondClap = 0x86
    }

    /// cropped-offset-rotated-6.heic (coded 90x64, ispe 90x60; properties hvcC, clap, irot 3, ispe, pixi) with
    /// its clap rewritten in place to 60x40, centred 1 right of and 2 above the middle, a second clap of 30x20,
    /// 3/2 right of and 1 above the middle, added at the end of ipco (meta, iprp and ipco grow by its 40 bytes,
    /// and iloc's base offset into mdat with them), and item 1's five associations in `order`. Both apertures
    /// lie inside the picture, turned or not (one reaching past its edge is cropped short by libheif, where
    /// the header and the decoder keep the size it promises: see ``HEIFCleanAperture/storedCrop(in:declared:)``).
    static func file(_ order: [Property]) throws -> Data {
        var bytes = [UInt8](try Fixtures.data("heif", "cropped-offset-rotated-6.heic"))
        func offset(of pattern: [UInt8]) throws -> Int { try #require(bytes.offset(of: pattern)) }
        func grow(_ type: String, by length: Int) throws {
            let box = try offset(of: Array(type.utf8)) - 4
            let size = bytes[box..<(box + 4)].reduce(0) { $0 << 8 | Int($1) }
            bytes.replaceSubrange(box..<(box + 4), with: [UInt8].uint32BE(size + length))
        }
        let clap = try offset(of: [0, 0, 0, 40] + Array("clap".utf8))
        bytes.replaceSubrange((clap + 8)..<(clap + 40), with: [60, 1, 40, 1, 1, 1, -2, 1].flatMap([UInt8].uint32BE))
        let ipma = try offset(of: Array("ipma".utf8)) - 4
        let secondClap = [0, 0, 0, 40] + Array("clap".utf8) + [30, 1, 20, 1, 3, 2, -1, 1].flatMap([UInt8].uint32BE)
        bytes.insert(contentsOf: secondClap, at: ipma)
        for type in ["meta", "iprp", "ipco"] { try grow(type, by: secondClap.count) }
        // iloc version 0 with 4-byte offsets, lengths and base offsets: FullBox, sizes, count, item ID, data
        // reference, then the base offset, which points into mdat.
        let iloc = try offset(of: Array("iloc".utf8)) + 4
        try #require(bytes[iloc..<(iloc + 6)].elementsEqual([0, 0, 0, 0, 0x44, 0x40]))
        let base = bytes[(iloc + 12)..<(iloc + 16)].reduce(0) { $0 << 8 | Int($1) }
        bytes.replaceSubrange((iloc + 12)..<(iloc + 16), with: [UInt8].uint32BE(base + secondClap.count))
        let entry = try offset(of: [0, 1, 5, 0x81, 0x82, 0x03, 0x04, 0x85])
        try #require(order.count == 5)
        bytes.replaceSubrange((entry + 3)..<(entry + 8), with: order.map(\.rawValue))
        return Data(bytes)
    }

    /// Two apertures in each order the suite's earlier version decoded (libheif before deb12u3 showed 30x20 for
    /// all of them), one aperture associated twice, and one rotation associated twice.
    @Test(
        arguments: [
            [.hvcC, .ispe, .firstClap, .secondClap, .pixi],
            [.hvcC, .ispe, .firstClap, .irot, .secondClap],
            [.hvcC, .ispe, .irot, .firstClap, .secondClap],
            [.hvcC, .firstClap, .ispe, .pixi, .secondClap],
            [.hvcC, .ispe, .firstClap, .firstClap, .pixi],
            [.hvcC, .ispe, .irot, .irot, .pixi],
        ] as [[Property]])
    func anItemWithARepeatedApertureOrRotationIsCorrupt(order: [Property]) throws {
        let data = try Self.file(order)
        #expect(Self.libheifDecodeError(data) == heif_error_Invalid_input)
        #expect {
            try ImageHeader.parse(data)
        } throws: {
            guard case .corrupt(let message) = ($0 as? ImageDecodingError)?.reason else { return false }
            return message.hasPrefix("more than one ") && message.hasSuffix(" associated with the primary item")
        }
        // The decoder refuses it before libheif is asked, so with a libheif that would decode it too.
        let header = try ImageHeader.parse(try Self.file([.hvcC, .ispe, .firstClap, .irot, .pixi]))
        #expect {
            try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        } throws: {
            guard case .corrupt(let message) = ($0 as? ImageDecodingError)?.reason else { return false }
            return message.hasPrefix("more than one ")
        }
    }

    /// One aperture and one rotation, in either order, still decode at the header's size, as libheif shows them.
    @Test(
        arguments: [[.hvcC, .ispe, .firstClap, .irot, .pixi], [.hvcC, .ispe, .irot, .firstClap, .pixi]] as [[Property]])
    func oneApertureAndOneRotationStillDecode(order: [Property]) throws {
        let data = try Self.file(order)
        let header = try ImageHeader.parse(data)
        // Coded 90x64 under an ispe of 90x60: libheif 1.22 and later show nothing, and the decoder has their error.
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            #expect(throws: HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif)) {
                try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            }
            #expect(Self.libheifDecodeError(data) == heif_error_Invalid_input)
            return
        }
        let shown = try HEIFTransformOrderTests.libheifDisplayed(data)
        #expect(header.displaySize == shown.pixelSize)
        let stored = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(stored.oriented(header.orientation) == shown)
    }

    /// The error libheif's own decode of the primary image of `data` gives, `heif_error_Ok` when it decodes.
    static func libheifDecodeError(_ data: Data) -> heif_error_code {
        guard let context = heif_context_alloc() else { return heif_error_Memory_allocation_error }
        defer { heif_context_free(context) }
        return data.withUnsafeBytes { raw -> heif_error_code in
            let read = heif_context_read_from_memory_without_copy(context, raw.baseAddress, raw.count, nil)
            guard read.code == heif_error_Ok else { return read.code }
            var handle: OpaquePointer?
            let primary = heif_context_get_primary_image_handle(context, &handle)
            guard primary.code == heif_error_Ok, let handle else { return primary.code }
            defer { heif_image_handle_release(handle) }
            var image: OpaquePointer?
            let decoded = heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, nil)
            if let image { heif_image_release(image) }
            return decoded.code
        }
    }
}
#endif
