#if os(Linux)
import CHEIF
import Foundation
import Testing

@testable import AsyncImageCache

/// HEIF applies an item's `clap`, `irot` and `imir` in the order they are associated with it (ISO/IEC
/// 23008-12 6.3): an aperture associated after a turn or a mirror crops the turned or mirrored picture,
/// and its width, height and offsets are measured along that picture's sides. MIAF asks writers for the
/// aperture first, but a HEIF file may put it later; libheif crops it where it comes.
@Suite("HEIF clean aperture after irot and imir")
struct HEIFCleanApertureOrderTests {
    enum Transform: String, CustomStringConvertible {
        case clap, irot, imir
        var description: String { rawValue }
    }

    /// cropped-offset-rotated-6.heic (coded 90x64, ispe 90x60; properties hvcC, clap, irot 3, ispe, pixi)
    /// with its clap rewritten in place to 40x50, centred 5 right of and 3 above the middle (inside the
    /// picture whether turned, 64x90, or not, 90x64 coded and 90x60 declared), with an imir of axis 1 in
    /// place of its pixi (padded to the pixi's 16 bytes) when `order` has one, and the item's associations
    /// hvcC, then `order`, then ispe (and the pixi, when it is still there).
    static func file(_ order: [Transform]) throws -> Data {
        var bytes = [UInt8](try Fixtures.data("heif", "cropped-offset-rotated-6.heic"))
        func offset(of pattern: [UInt8]) throws -> Int { try #require(bytes.offset(of: pattern)) }
        let clap = try offset(of: [0, 0, 0, 40] + Array("clap".utf8))
        bytes.replaceSubrange((clap + 8)..<(clap + 40), with: [40, 1, 50, 1, 10, 2, -6, 2].flatMap([UInt8].uint32BE))
        if order.contains(.imir) {
            let pixi = try offset(of: [0, 0, 0, 16] + Array("pixi".utf8))
            let imir = [0, 0, 0, 16] + Array("imir".utf8) + [1] + [UInt8](repeating: 0, count: 7)
            bytes.replaceSubrange(pixi..<(pixi + 16), with: imir)
        }
        // Item 1's five associations: hvcC (1), clap (2), irot (3), ispe (4), pixi (5, or the imir in its
        // place); the top bit marks a property essential.
        let entry = try offset(of: [0, 1, 5, 0x81, 0x82, 0x03, 0x04, 0x85])
        let indices: [Transform: UInt8] = [.clap: 0x82, .irot: 0x83, .imir: 0x85]
        let associations = [0x81] + order.map { indices[$0]! } + [0x04] + (order.contains(.imir) ? [] : [0x85])
        bytes.replaceSubrange((entry + 3)..<(entry + 8), with: associations)
        return Data(bytes)
    }

    @Test(
        arguments: [
            [.clap, .irot], [.irot, .clap], [.clap, .irot, .imir], [.irot, .imir, .clap], [.imir, .clap, .irot],
        ] as [[Transform]])
    func theCropIsWhereLibheifMakesIt(order: [Transform]) throws {
        let data = try Self.file(order)
        let header = try ImageHeader.parse(data)
        // Coded 90x64 under an ispe of 90x60: libheif 1.22 and later show nothing, and the decoder has their error.
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            #expect(throws: HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif)) {
                try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            }
            #expect(HEIFCleanAperturesTests.libheifDecodeError(data) == heif_error_Invalid_input)
            return
        }
        let stored = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(stored.pixelSize == header.storedSize)
        let shown = try HEIFTransformOrderTests.libheifDisplayed(data)
        #expect(header.displaySize == shown.pixelSize)
        #expect(stored.oriented(header.orientation) == shown)
    }
}
#endif
