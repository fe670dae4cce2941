#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// An item may carry more than one `clap`: HEIF applies its transformative properties (`clap`, `irot`,
/// `imir`) in the order they are associated with it (ISO/IEC 23008-12 6.3), and libheif 1.15 crops by each
/// aperture in turn, measured on the picture as the properties before it left it.
@Suite("HEIF items with more than one clean aperture")
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

    /// Before, the header applied the first aperture only: 60x40 for two apertures (libheif shows 30x20), and
    /// for clap, irot, clap 60x40 turned (40x60 displayed, libheif 30x20).
    @Test(
        arguments: [
            [.hvcC, .ispe, .firstClap, .secondClap, .pixi],
            [.hvcC, .ispe, .firstClap, .irot, .secondClap],
            [.hvcC, .ispe, .irot, .firstClap, .secondClap],
            [.hvcC, .firstClap, .ispe, .pixi, .secondClap],
        ] as [[Property]])
    func everyApertureCropsInItsTurn(order: [Property]) throws {
        let data = try Self.file(order)
        let header = try ImageHeader.parse(data)
        let shown = try HEIFTransformOrderTests.libheifDisplayed(data)
        #expect(shown.pixelSize == PixelSize(width: 30, height: 20))
        #expect(header.displaySize == shown.pixelSize)
        let stored = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(stored.pixelSize == header.storedSize)
        #expect(stored.oriented(header.orientation) == shown)
    }
}
#endif
