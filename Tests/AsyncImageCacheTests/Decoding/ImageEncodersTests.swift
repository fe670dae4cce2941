#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

@Suite("Image encoders")
struct ImageEncodersTests {
    /// Smooth ramps in every channel: what JPEG is made for, so the round-trip error is small.
    static let gradient = Bitmap.drawing(width: 97, height: 61) { x, y in
        (UInt8(x * 255 / 96), UInt8(y * 255 / 60), UInt8((x + y) * 255 / 156), 255)
    }

    @Test func pngRoundTripsEveryPixelExactlyIncludingAlpha() throws {
        var generator = SeededGenerator(seed: 99)
        let noise = Bitmap(width: 37, height: 23, pixels: generator.bytes(37 * 23 * 4))
        let data = try ImageEncoders.PNG().encode(noise)
        #expect(StoredSize.png(data) == PixelSize(width: 37, height: 23))
        #expect(try ImageDecoders.PNG().decode(data, context: decodingContext(.png)) == noise)
    }

    @Test func aOnePixelPNGRoundTrips() throws {
        let pixel = Bitmap(width: 1, height: 1, pixels: [10, 20, 30, 40])
        let data = try ImageEncoders.PNG().encode(pixel)
        #expect(try ImageDecoders.PNG().decode(data, context: decodingContext(.png)) == pixel)
    }

    @Test func jpegRoundTripsWithinTheToleranceOfItsQuality() throws {
        let data = try ImageEncoders.JPEG(quality: 95).encode(Self.gradient)
        #expect(StoredSize.jpeg(data) == PixelSize(width: 97, height: 61))
        let decoded = try ImageDecoders.JPEG().decode(data, context: decodingContext(.jpeg))
        #expect(decoded.pixelSize == Self.gradient.pixelSize)
        #expect(decoded.meanColorDifference(from: Self.gradient) < 2)
    }

    @Test func jpegDropsAlphaAndDecodesOpaque() throws {
        let translucent = Bitmap.drawing(width: 16, height: 16) { _, _ in (200, 100, 50, 0) }
        let decoded = try ImageDecoders.JPEG().decode(
            try ImageEncoders.JPEG().encode(translucent),
            context: decodingContext(.jpeg)
        )
        #expect(decoded.alphaValues.allSatisfy { $0 == 255 })
        #expect(decoded.meanColorDifference(from: translucent) < 3)
    }

    @Test func lowerJPEGQualityGivesSmallerFilesAndOutOfRangeQualityIsClamped() throws {
        let low = try ImageEncoders.JPEG(quality: 10).encode(Self.gradient)
        let high = try ImageEncoders.JPEG(quality: 100).encode(Self.gradient)
        #expect(low.count < high.count)
        #expect(
            try ImageEncoders.JPEG(quality: 0).encode(Self.gradient)
                == ImageEncoders.JPEG(quality: 1).encode(Self.gradient))
        #expect(try ImageEncoders.JPEG(quality: 500).encode(Self.gradient) == high)
    }
}

@Suite("Default decoder")
struct DefaultDecoderTests {
    @Test(arguments: [
        ("jpeg", "testorig.jpg"), ("pngsuite", "basn6a08.png"), ("webp", "lossy_alpha.webp"), ("gif", "beacon.gif"),
    ])
    func itDecodesEachFormatWithItsCodec(folder: String, name: String) throws {
        let data = try Fixtures.data(folder, name)
        let format = try ImageHeader.parse(data).format
        let context = decodingContext(format)
        let codecs: [ImageFormat: any ImageDecoding] = [
            .jpeg: ImageDecoders.JPEG(), .png: ImageDecoders.PNG(), .webp: ImageDecoders.WebP(),
            .gif: ImageDecoders.GIF(),
        ]
        let codec = try #require(codecs[format])
        #expect(try ImageDecoders.Default().decode(data, context: context) == codec.decode(data, context: context))
    }

    @Test(arguments: [ImageFormat.bmp, .heif, .avif])
    func otherFormatsAreUnsupportedForNow(format: ImageFormat) {
        let error = decodingError { () throws(ImageDecodingError) in
            try ImageDecoders.Default().decode(Data([0, 1, 2, 3]), context: decodingContext(format))
        }
        #expect(error == ImageDecodingError(format: format, reason: .unsupportedFormat))
    }

    @Test func jpegBytesLabelledPNGFailAsPNGRatherThanDecodingAsSomethingElse() throws {
        let jpeg = try Fixtures.data("jpeg", "testorig.jpg")
        let error = decodingError { () throws(ImageDecodingError) in
            try ImageDecoders.Default().decode(jpeg, context: decodingContext(.png))
        }
        #expect(error?.format == .png)
    }
}
#endif
