#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A minimum size no image reaches asks for the full size, however large its numbers.
@Suite struct JPEGMinimumSizeBoundsTests {
    /// `minimumSize.width * 8` trapped on overflow for a side past Int.max / 8 (a caller's way of saying
    /// "as large as it gets"), so the process died instead of decoding at full size.
    @Test(arguments: [Int.max, Int.max / 8 + 1, 1 << 62])
    func aMinimumSizeBeyondAnyImageDecodesAtFullSize(side: Int) throws {
        let data = try Fixtures.data("jpeg", "testorig.jpg")
        let header = try ImageHeader.parse(data)
        for minimum in [
            PixelSize(width: side, height: side), PixelSize(width: 1, height: side),
            PixelSize(width: side, height: 1),
        ] {
            let context = ImageDecodingContext(header: header, minimumSize: minimum)
            #expect(ImageDecoders.JPEG.scaleNumerator(imageSize: header.storedSize, covering: minimum) == 8)
            let bitmap = try ImageDecoders.JPEG().decode(data, context: context)
            #expect(bitmap.pixelSize == header.storedSize)
        }
    }

    /// A side below Int.min / 8 trapped the same way (arithmetic overflow in `minimumSize.height * 8`,
    /// the process gone) where -5 or 0 decodes at the smallest scale: it asks for no pixels on that side.
    @Test(arguments: [Int.min, Int.min / 8 - 1])
    func aNegativeMinimumSideOfAnySizeAsksForNoPixelsOnThatSide(side: Int) throws {
        let data = try Fixtures.data("jpeg", "testorig.jpg")
        let header = try ImageHeader.parse(data)
        let smallest = try ImageDecoders.JPEG().decode(
            data, context: ImageDecodingContext(header: header, minimumSize: PixelSize(width: 0, height: 0)))
        for minimum in [
            PixelSize(width: side, height: side), PixelSize(width: 0, height: side), PixelSize(width: side, height: 0),
        ] {
            let context = ImageDecodingContext(header: header, minimumSize: minimum)
            #expect(try ImageDecoders.JPEG().decode(data, context: context).pixelSize == smallest.pixelSize)
        }
    }
}
#endif
