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

    @Test func aFrameReachingPastTheScreenIsClipped() throws {
        // A 3x3 frame at (2, 1) on a 3x2 screen: only its top-left pixel shows, at (2, 1).
        let frame = SyntheticGIF.Frame(left: 2, top: 1, width: 3, height: 3, indices: [0, 1, 1, 1, 1, 1, 1, 1, 1])
        let data = SyntheticGIF.make(width: 3, height: 2, globalColors: [Self.red, Self.green], frames: [frame])
        let bitmap = try decode(data)
        #expect(bitmap.pixelSize == PixelSize(width: 3, height: 2))
        #expect(bitmap.alphaValues == [0, 0, 0, 0, 0, 255])
        #expect(rows(bitmap)[1][2] == [255, 0, 0, 255])
    }

    @Test func aFrameEntirelyOffTheScreenGivesATransparentScreen() throws {
        let frame = SyntheticGIF.Frame(left: 10, top: 0, width: 2, height: 2, indices: [1, 1, 1, 1])
        let data = SyntheticGIF.make(width: 3, height: 2, globalColors: [Self.red, Self.green], frames: [frame])
        #expect(try decode(data).alphaValues.allSatisfy { $0 == 0 })
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

    @Test func aFileWithoutAnyColorTableIsCorrupt() throws {
        let frame = SyntheticGIF.Frame(width: 2, height: 1, indices: [0, 1])
        let data = SyntheticGIF.make(width: 2, height: 1, globalColors: nil, frames: [frame])
        let error = decodingError { () throws(ImageDecodingError) in try decode(data) }
        #expect(error == ImageDecodingError(format: .gif, reason: .corrupt("no color table for the first image")))
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
