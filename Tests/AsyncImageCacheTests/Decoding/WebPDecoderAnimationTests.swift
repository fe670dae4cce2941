#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Frame 1 of an animation on its canvas, at full size and scaled. The fixtures' frames all fill their canvas,
/// so these tests move frame 1 of anim.webp (200x200) to an offset on a larger canvas by editing the file.
@Suite("WebP decoder: the first frame of an animation")
struct WebPDecoderAnimationTests {
    let decoder = ImageDecoders.WebP()

    /// anim.webp with a `width` x `height` canvas and its first frame at (`x`, `y`), both even.
    static func anim(canvasWidth width: Int, height: Int, firstFrameAt x: Int = 0, _ y: Int = 0) throws -> Data {
        var data = try Fixtures.data("webp", "anim.webp")
        // The VP8X chunk comes first: 4 bytes of flags, then the canvas size minus one, 24 bits each.
        data.replaceSubrange(24..<30, with: littleEndian24(width - 1) + littleEndian24(height - 1))
        let frame = try #require(firstChunk("ANMF", in: data))
        // An ANMF payload starts with the frame's offset divided by two, 24 bits each.
        data.replaceSubrange(frame + 8..<frame + 14, with: littleEndian24(x / 2) + littleEndian24(y / 2))
        return data
    }

    /// `data` (an animation made by ``anim(canvasWidth:height:firstFrameAt:_:)``) with frame 1's ALPH chunk cut
    /// out: an opaque lossy frame, which libwebp scales with the canvas (one with alpha is decoded full size).
    static func withoutFrameAlpha(_ data: Data) throws -> Data {
        var data = data
        let frame = try #require(firstChunk("ANMF", in: data))
        // The ANMF header (offset, size, duration, flags) takes 16 bytes; its first sub-chunk follows.
        let alpha = frame + 8 + 16
        try #require(data[alpha..<alpha + 4].elementsEqual("ALPH".utf8))
        let size = data[alpha + 4..<alpha + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
        let cut = 8 + size + (size & 1)
        data.removeSubrange(alpha..<alpha + cut)
        for sizeField in [4, frame + 4] {
            let old = data[sizeField..<sizeField + 4].reversed().reduce(0) { $0 << 8 | Int($1) }
            data.replaceSubrange(sizeField..<sizeField + 4, with: (0..<4).map { UInt8((old - cut) >> (8 * $0) & 0xFF) })
        }
        return data
    }

    /// The offset of the first chunk named `fourCC` after the RIFF header.
    static func firstChunk(_ fourCC: String, in data: Data) -> Int? {
        var offset = 12
        while offset + 8 <= data.count {
            if data[offset..<offset + 4].elementsEqual(fourCC.utf8) { return offset }
            let size = data[offset + 4..<offset + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
            offset += 8 + size + (size & 1)
        }
        return nil
    }

    static func littleEndian24(_ value: Int) -> [UInt8] { [0, 8, 16].map { UInt8(value >> $0 & 0xFF) } }

    func decode(_ data: Data, minimumSize: PixelSize? = nil) throws -> Bitmap {
        try decoder.decode(data, context: decodingContext(.webp, minimumSize: minimumSize))
    }

    /// The `size` part of `bitmap` whose top left corner is at (`x`, `y`).
    func crop(_ bitmap: Bitmap, x: Int, y: Int, size: PixelSize) -> Bitmap {
        var pixels: [UInt8] = []
        for row in y..<y + size.height {
            let start = (row * bitmap.width + x) * 4
            pixels += bitmap.pixels[start..<start + size.width * 4]
        }
        return Bitmap(width: size.width, height: size.height, pixels: pixels)
    }

    @Test func theEditedFileSaysWhatTheTestsExpect() throws {
        let header = try ImageHeader.parse(try Self.anim(canvasWidth: 400, height: 300, firstFrameAt: 100, 50))
        #expect(header.storedSize == PixelSize(width: 400, height: 300))
    }

    @Test func aFirstFrameAtAnOffsetSitsThereOnATransparentCanvas() throws {
        let frame = try decode(try Fixtures.data("webp", "anim.webp"))
        let bitmap = try decode(try Self.anim(canvasWidth: 400, height: 300, firstFrameAt: 100, 50))
        #expect(bitmap.pixelSize == PixelSize(width: 400, height: 300))
        #expect(crop(bitmap, x: 100, y: 50, size: frame.pixelSize) == frame)
        let transparentOutside =
            bitmap.alphaValues.filter { $0 == 0 }.count - frame.alphaValues.filter { $0 == 0 }.count
        #expect(transparentOutside == 400 * 300 - 200 * 200)
    }

    @Test func aScaledCanvasScalesTheFrameAndItsOffsetAlike() throws {
        // Half size: the frame is 100x100 at (50, 25), the same as the frame alone decoded at half size. An
        // opaque frame: one with alpha would be decoded full size (see below).
        let halfFrame = try decode(
            try Self.withoutFrameAlpha(Self.anim(canvasWidth: 200, height: 200)),
            minimumSize: PixelSize(width: 100, height: 100))
        #expect(halfFrame.pixelSize == PixelSize(width: 100, height: 100) && halfFrame.isOpaque)
        let data = try Self.withoutFrameAlpha(Self.anim(canvasWidth: 400, height: 300, firstFrameAt: 100, 50))
        let bitmap = try decode(data, minimumSize: PixelSize(width: 200, height: 120))
        #expect(bitmap.pixelSize == PixelSize(width: 200, height: 150))
        #expect(crop(bitmap, x: 50, y: 25, size: halfFrame.pixelSize) == halfFrame)
        #expect(bitmap.pixel(x: 49, y: 60).alpha == 0 && bitmap.pixel(x: 150, y: 60).alpha == 0)
    }

    /// A lossy frame 1 with alpha (anim.webp's) comes out on a full-size canvas, up to 4 megapixels, as a still
    /// lossy picture with alpha does: libwebp's scaling greyed a light shape's edges on a transparent ground, and
    /// the caller's resize does not. Before, an animation's canvas was always scaled.
    @Test func aLossyFirstFrameWithAlphaIsDecodedOnAFullSizeCanvas() throws {
        let data = try Fixtures.data("webp", "anim.webp")
        let full = try decode(data)
        #expect(full.pixelSize == PixelSize(width: 200, height: 200) && !full.isOpaque)
        #expect(try decode(data, minimumSize: PixelSize(width: 50, height: 50)) == full)
        let offset = try Self.anim(canvasWidth: 400, height: 300, firstFrameAt: 100, 50)
        let onCanvas = try decode(offset, minimumSize: PixelSize(width: 100, height: 75))
        #expect(onCanvas.pixelSize == PixelSize(width: 400, height: 300))
        #expect(crop(onCanvas, x: 100, y: 50, size: full.pixelSize) == full)
    }

    @Test func aFrameSpanRoundsOutwardsAndStaysInsideTheCanvas() {
        let span = WebPFirstFrame.scaledSpan
        // 100...299 of 400 at 200: exactly 50...149.
        #expect(span(100, 200, 400, 200) == (50, 100))
        // 1...2 of 3 at 2: starts at 0 (2/3 rounded down), ends at 2 (6/3) - two pixels.
        #expect(span(1, 2, 3, 2) == (0, 2))
        // A frame at the far edge of a canvas scaled to one pixel still covers that pixel.
        #expect(span(29_800, 200, 30_000, 1) == (0, 1))
        // Unscaled spans are left alone.
        #expect(span(10, 20, 64, 64) == (10, 20))
    }

    @Test func anAnimatedCanvasOf30000By30000IsRefusedByTheBudgetBeforeAnythingIsAllocated() throws {
        // VP8X allows 24-bit canvas sides; the frame (200x200) is untouched, so libwebp reads the canvas size
        // without complaint and only the budget stands between it and a 3.6 GB bitmap.
        let data = try Self.anim(canvasWidth: 30_000, height: 30_000)
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.webp))
        }
        let reason = ImageDecodingError.Reason.pixelBudgetExceeded(
            pixels: 900_000_000, budget: ImageDecodingContext.defaultPixelBudget)
        #expect(error == ImageDecodingError(format: .webp, reason: reason))
    }

    @Test func theSameHugeCanvasAskedForAThumbnailDecodesAtThumbnailSize() throws {
        // The budget applies to what is produced: 100x100 here, with frame 1 shrunk to its top-left pixel.
        let bitmap = try decode(
            try Self.anim(canvasWidth: 30_000, height: 30_000), minimumSize: PixelSize(width: 100, height: 100))
        #expect(bitmap.pixelSize == PixelSize(width: 100, height: 100))
        #expect(bitmap.alphaValues.dropFirst().allSatisfy { $0 == 0 })
    }
}
#endif
