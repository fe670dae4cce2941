#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Color tables and frame placement, on GIFs written for the purpose (the fixtures all use one global table).
@Suite("GIF decoder: color tables and frame placement")
struct GIFDecoderLayoutTests {
    static let red: SyntheticGIF.Color = (255, 0, 0)
    static let green: SyntheticGIF.Color = (0, 255, 0)
    static let blue: SyntheticGIF.Color = (0, 0, 255)

    let decoder = ImageDecoders.GIF()

    func decode(_ data: Data) throws(ImageDecodingError) -> Bitmap {
        try decoder.decode(data, context: decodingContext(.gif))
    }

    /// The pixels of `bitmap` as (red, green, blue, alpha) tuples flattened to arrays, row by row.
    func rows(_ bitmap: Bitmap) -> [[[UInt8]]] {
        (0..<bitmap.height).map { y in
            (0..<bitmap.width).map { x in
                let pixel = bitmap.pixel(x: x, y: y)
                return [pixel.red, pixel.green, pixel.blue, pixel.alpha]
            }
        }
    }

    @Test func aLocalColorTableWinsOverTheGlobalOne() throws {
        let frame = SyntheticGIF.Frame(width: 2, height: 1, indices: [0, 1], localColors: [Self.blue, Self.green])
        let data = SyntheticGIF.make(width: 2, height: 1, globalColors: [Self.red, Self.red], frames: [frame])
        #expect(rows(try decode(data)) == [[[0, 0, 255, 255], [0, 255, 0, 255]]])
    }

    @Test func theGlobalColorTableServesAFrameWithoutALocalOne() throws {
        let frame = SyntheticGIF.Frame(width: 2, height: 1, indices: [1, 0])
        let data = SyntheticGIF.make(width: 2, height: 1, globalColors: [Self.red, Self.green], frames: [frame])
        #expect(rows(try decode(data)) == [[[0, 255, 0, 255], [255, 0, 0, 255]]])
    }

    @Test func aFrameAtAnOffsetLeavesTheUncoveredScreenTransparent() throws {
        // A 2x1 green frame at (1, 1) on a 3x2 screen.
        let frame = SyntheticGIF.Frame(left: 1, top: 1, width: 2, height: 1, indices: [1, 1])
        let data = SyntheticGIF.make(width: 3, height: 2, globalColors: [Self.red, Self.green], frames: [frame])
        let clear: [UInt8] = [0, 0, 0, 0]
        let green: [UInt8] = [0, 255, 0, 255]
        #expect(rows(try decode(data)) == [[clear, clear, clear], [clear, green, green]])
    }

    /// A first frame that reaches past the screen grows it, as browsers (Wuffs) and Pillow draw the file,
    /// and the header says the same size; clipped, the picture lost what fell outside the screen.
    @Test func aFirstFrameReachingPastTheScreenGrowsIt() throws {
        // A 3x3 frame at (2, 1) on a 3x2 screen: the screen grows to 5x4 (Pillow 13 opens it as 5x4).
        let frame = SyntheticGIF.Frame(left: 2, top: 1, width: 3, height: 3, indices: [0, 1, 1, 1, 1, 1, 1, 1, 1])
        let data = SyntheticGIF.make(width: 3, height: 2, globalColors: [Self.red, Self.green], frames: [frame])
        let bitmap = try decode(data)
        #expect(bitmap.pixelSize == PixelSize(width: 5, height: 4))
        #expect(try ImageHeader.parse(data).storedSize == bitmap.pixelSize)
        let clear: [UInt8] = [0, 0, 0, 0]
        let (red, green): ([UInt8], [UInt8]) = ([255, 0, 0, 255], [0, 255, 0, 255])
        #expect(
            rows(bitmap) == [
                [clear, clear, clear, clear, clear], [clear, clear, red, green, green],
                [clear, clear, green, green, green], [clear, clear, green, green, green],
            ])
    }

    @Test func aFirstFrameOffTheScreenGrowsItToTheFrame() throws {
        // A 2x2 frame at (10, 0) on a 3x2 screen: 12x2, the frame at its right end.
        let frame = SyntheticGIF.Frame(left: 10, top: 0, width: 2, height: 2, indices: [1, 1, 1, 1])
        let data = SyntheticGIF.make(width: 3, height: 2, globalColors: [Self.red, Self.green], frames: [frame])
        let bitmap = try decode(data)
        try #require(bitmap.pixelSize == PixelSize(width: 12, height: 2))
        #expect(try ImageHeader.parse(data).storedSize == bitmap.pixelSize)
        #expect(
            (0..<2).allSatisfy { y in (0..<12).allSatisfy { x in (bitmap.pixel(x: x, y: y).alpha == 255) == (x >= 10) }
            })
    }

    /// A screen of 0x0, which careless encoders write, takes the first frame's size; it was refused as corrupt.
    @Test func aScreenOfZeroTakesTheFirstFramesSize() throws {
        let frame = SyntheticGIF.Frame(width: 2, height: 1, indices: [1, 0])
        let data = SyntheticGIF.make(width: 0, height: 0, globalColors: [Self.red, Self.green], frames: [frame])
        #expect(rows(try decode(data)) == [[[0, 255, 0, 255], [255, 0, 0, 255]]])
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 2, height: 1))
    }

    /// The header walks past the extensions before the first image to find it, and needs the bytes that far.
    @Test func theHeaderFindsTheFirstImagePastItsExtensions() throws {
        let frame = SyntheticGIF.Frame(
            left: 1, top: 2, width: 4, height: 1, indices: [1, 1, 1, 1], transparentIndex: 0)
        let data = SyntheticGIF.make(width: 2, height: 2, globalColors: [Self.red, Self.green], frames: [frame])
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 5, height: 3))
        #expect(try decode(data).pixelSize == PixelSize(width: 5, height: 3))
        // Cut before the image descriptor's size fields: more bytes are needed, not a different size.
        let descriptor = try #require(data.indices.dropFirst(13 + 6).first { data[$0] == 0x2C })
        #expect(throws: ImageDecodingError(format: .gif, reason: .truncated)) {
            try ImageHeader.parse(data.prefix(descriptor + 6))
        }
    }

    @Test func theTransparentIndexIsTransparentAndOtherIndicesAreOpaque() throws {
        let frame = SyntheticGIF.Frame(width: 3, height: 1, indices: [0, 1, 2], transparentIndex: 1)
        let data = SyntheticGIF.make(
            width: 3, height: 1, globalColors: [Self.red, Self.green, Self.blue, Self.red], frames: [frame])
        #expect(rows(try decode(data)) == [[[255, 0, 0, 255], [0, 0, 0, 0], [0, 0, 255, 255]]])
    }

    @Test func anInterlacedFrameIsPutBackInRowOrder() throws {
        // Eleven rows, each a different color index: every pass of the interlace has at least one row.
        let colors = (0..<11).map { (row: Int) -> SyntheticGIF.Color in (UInt8(row * 20), UInt8(200 - row * 10), 7)
        }
        let indices = (0..<11).flatMap { row in [UInt8(row), UInt8(row)] }
        let interlaced = SyntheticGIF.Frame(width: 2, height: 11, indices: indices, interlaced: true)
        let bitmap = try decode(SyntheticGIF.make(width: 2, height: 11, globalColors: colors, frames: [interlaced]))
        #expect((0..<11).map { bitmap.pixel(x: 1, y: $0).red } == (0..<11).map { UInt8($0 * 20) })
    }

    @Test func anIndexPastTheColorTableIsTransparent() throws {
        // A two-entry table; index 5 names no color.
        let frame = SyntheticGIF.Frame(width: 2, height: 1, indices: [1, 5])
        let data = SyntheticGIF.make(width: 2, height: 1, globalColors: [Self.red, Self.green], frames: [frame])
        #expect(rows(try decode(data)) == [[[0, 255, 0, 255], [0, 0, 0, 0]]])
    }

    /// A GIF may have no color table at all (GIF89a leaves the colors to the decoder then): Chrome's decoder
    /// (Wuffs) draws such a frame's pixels opaque black, its transparent index transparent. Before, the file
    /// failed as corrupt ("no color table for the first image").
    @Test func aFileWithoutAnyColorTableDrawsOpaqueBlackAndItsTransparentIndex() throws {
        let frame = SyntheticGIF.Frame(width: 3, height: 1, indices: [0, 1, 7], transparentIndex: 1)
        let data = SyntheticGIF.make(width: 3, height: 1, globalColors: nil, frames: [frame])
        #expect(rows(try decode(data)) == [[[0, 0, 0, 255], [0, 0, 0, 0], [0, 0, 0, 255]]])
    }

    /// The transparent 1x1 placeholder lazy-loading scripts put in `src` (lazysizes' documented one): no color
    /// table, and its one pixel the transparent index.
    @Test func theLazyLoadingPlaceholderIsOneTransparentPixel() throws {
        let data = try #require(Data(base64Encoded: "R0lGODlhAQABAAAAACH5BAEKAAEALAAAAAABAAEAAAICTAEAOw=="))
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 1, height: 1))
        #expect(try decode(data).pixels == [0, 0, 0, 0])
    }

    @Test func onlyTheFirstFrameIsRead() throws {
        // The second frame's image data is cut off after its first bytes: a decoder that went on would fail.
        let first = SyntheticGIF.Frame(width: 2, height: 1, indices: [0, 1])
        let single = SyntheticGIF.make(width: 2, height: 1, globalColors: [Self.red, Self.green], frames: [first])
        let double = SyntheticGIF.make(
            width: 2, height: 1, globalColors: [Self.red, Self.green],
            frames: [first, SyntheticGIF.Frame(width: 2, height: 1, indices: [1, 1])])
        let cut = double.prefix(single.count + 12)
        #expect(try decode(cut) == decode(single))
    }
}
#endif
