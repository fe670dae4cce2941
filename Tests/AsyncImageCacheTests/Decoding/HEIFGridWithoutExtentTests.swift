#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A primary `grid` item without the `ispe` HEIF asks of it: libheif makes the canvas its description
/// gives, and the header reads that size and the item's own `irot`, not a tile's `ispe`.
@Suite("HEIF grid without an ispe")
struct HEIFGridWithoutExtentTests {
    /// grid.heic (a 96x64 grid of four 48x32 tiles) with the grid's own `ispe` (20 bytes) replaced in place:
    /// by an `irot` of `quarterTurns` and a `free` box filling the rest, or by a `free` box alone.
    static func gridWithoutExtent(quarterTurns: UInt8?) throws -> Data {
        var bytes = [UInt8](try Fixtures.data("heif", "grid.heic"))
        let ispe: [UInt8] = [0, 0, 0, 20] + Array("ispe".utf8) + [0, 0, 0, 0, 0, 0, 0, 96, 0, 0, 0, 64]
        let start = try #require(
            (0...(bytes.count - ispe.count)).first { bytes[$0..<($0 + ispe.count)].elementsEqual(ispe) })
        let replacement: [UInt8] =
            if let quarterTurns {
                [0, 0, 0, 9] + Array("irot".utf8) + [quarterTurns] + [0, 0, 0, 11] + Array("free".utf8) + [0, 0, 0]
            } else {
                [0, 0, 0, 20] + Array("free".utf8) + [UInt8](repeating: 0, count: 12)
            }
        bytes.replaceSubrange(start..<(start + ispe.count), with: replacement)
        return Data(bytes)
    }

    @Test func theHeaderTakesTheGridsCanvasNotATilesExtent() throws {
        let data = try Self.gridWithoutExtent(quarterTurns: nil)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        #expect(header.orientation == .up)
        // Its tiles are coded 64x64 under an ispe of 48x32, as in grid.heic.
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            #expect(throws: HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif)) {
                try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            }
            return
        }
        let bitmap = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == header.storedSize)
        // The same picture as the grid with its ispe.
        let original = try Fixtures.data("heif", "grid.heic")
        let expected = try ImageDecoders.HEIF().decode(
            original, context: ImageDecodingContext(header: try ImageHeader.parse(original)))
        #expect(bitmap == expected)
    }

    @Test func theGridsOwnRotationIsKeptAndTheStoreTurnsItUpright() async throws {
        // One quarter turn anticlockwise: EXIF orientation 8.
        let data = try Self.gridWithoutExtent(quarterTurns: 1)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        #expect(header.orientation == .left)
        let folder = TemporaryDirectory("heif-grid")
        let file = folder.url.appendingPathComponent("grid.heic")
        try data.write(to: file)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        if HEIFLibrary.refusesAQuarterTurnWithoutExtent {
            let refusal = HEIFLibrary.quarterTurnWithoutExtent(.heif)
            #expect(throws: refusal) {
                try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            }
            await #expect(throws: ImageLoadingError.decodingFailed(refusal)) {
                try await store.image(for: ImageRequest(url: file))
            }
            return
        }
        let upright = try await store.image(for: ImageRequest(url: file))
        #expect(upright.pixelSize == PixelSize(width: 64, height: 96))
        let stored = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(upright == stored.oriented(.left))
    }
}
#endif
