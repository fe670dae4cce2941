#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// libwebp decodes a lossless (VP8L) bitstream into a buffer of the whole image, 4 bytes a pixel, whatever
/// scale the output has: like a progressive JPEG's coefficients, the full size is what a scaled decode
/// allocates, so the full size is what the pixel budget must be checked on.
@Suite("WebP lossless decode and the pixel budget")
struct WebPLosslessBudgetTests {
    @Test func aScaledDecodeOfALosslessWebPChecksTheFullSizeAgainstTheBudget() throws {
        // 6 KB that make a 4096x4096 (16.8-megapixel, 64 MiB) image.
        let data = try Fixtures.data("budget", "gradient-4096.lossless.webp")
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 4096, height: 4096))
        // A 256x256 thumbnail is well inside a 4-megapixel budget; the 16.8-megapixel buffer behind it is not.
        let context = ImageDecodingContext(
            header: header, minimumSize: PixelSize(width: 256, height: 256), pixelBudget: 4_000_000)
        let error = decodingError { () throws(ImageDecodingError) in
            try ImageDecoders.WebP().decode(data, context: context)
        }
        let reason = ImageDecodingError.Reason.pixelBudgetExceeded(pixels: 4096 * 4096, budget: 4_000_000)
        #expect(error == ImageDecodingError(format: .webp, reason: reason))
    }

    @Test func aLosslessFirstFrameOfAnAnimationIsCheckedAtItsFullSizeToo() throws {
        // random_lossless.webp: 64x63 lossless frames on a 64x63 canvas, asked for as 8x8.
        let data = try Fixtures.data("webp", "random_lossless.webp")
        let header = try ImageHeader.parse(data)
        let context = ImageDecodingContext(
            header: header, minimumSize: PixelSize(width: 8, height: 8), pixelBudget: 64 * 63 - 1)
        let error = decodingError { () throws(ImageDecodingError) in
            try ImageDecoders.WebP().decode(data, context: context)
        }
        let reason = ImageDecodingError.Reason.pixelBudgetExceeded(pixels: 64 * 63, budget: 64 * 63 - 1)
        #expect(error == ImageDecodingError(format: .webp, reason: reason))
    }

    @Test func aLossyWebPWithAlphaIsCheckedAtItsFullSize() throws {
        // 62 KB that make a 4096x4096 image with alpha, which libwebp decodes whole at any scale.
        let data = try Fixtures.data("budget", "alpha-4096.lossy.webp")
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 4096, height: 4096))
        func decode(budget: Int) throws(ImageDecodingError) -> Bitmap {
            let context = ImageDecodingContext(
                header: header, minimumSize: PixelSize(width: 256, height: 256), pixelBudget: budget)
            return try ImageDecoders.WebP().decode(data, context: context)
        }
        // A 256 px thumbnail fits a 4-megapixel budget; the 16.8 megapixels of alpha behind it do not.
        let error = decodingError { () throws(ImageDecodingError) in try decode(budget: 4_000_000) }
        let reason = ImageDecodingError.Reason.pixelBudgetExceeded(pixels: 4096 * 4096, budget: 4_000_000)
        #expect(error == ImageDecodingError(format: .webp, reason: reason))
        // Within the budget, it decodes scaled, alpha and all.
        let bitmap = try decode(budget: 4096 * 4096)
        #expect(bitmap.pixelSize == PixelSize(width: 256, height: 256))
        #expect(!bitmap.isOpaque)
    }

    @Test func aLossyWebPStillDecodesScaledWithinTheBudgetOfItsOutput() throws {
        // Lossy VP8 decodes a few macroblock rows at a time: only the output counts.
        let data = try Fixtures.data("webp", "yellow_rose.lossy.webp")
        let header = try ImageHeader.parse(data)
        let context = ImageDecodingContext(
            header: header, minimumSize: PixelSize(width: 100, height: 50), pixelBudget: 100 * 76)
        let bitmap = try ImageDecoders.WebP().decode(data, context: context)
        #expect(bitmap.pixelSize == PixelSize(width: 100, height: 76))
    }
}
#endif
