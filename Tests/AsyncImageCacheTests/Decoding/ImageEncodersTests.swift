#if os(Linux)
import Foundation
import Testing

#if canImport(CPNG)
import CPNG
#endif

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

    @Test func aPNGLargerThanItsFirstOutputBufferRoundTrips() throws {
        // Noise does not compress, so the output outgrows the buffer the encoder starts with.
        var generator = SeededGenerator(seed: 7)
        let noise = Bitmap(width: 300, height: 200, pixels: generator.bytes(300 * 200 * 4))
        let data = try ImageEncoders.PNG().encode(noise)
        #expect(data.count > 300 * 200 * 4)
        #expect(try ImageDecoders.PNG().decode(data, context: decodingContext(.png)) == noise)
    }

    @Test func flatAreasCompressToAlmostNothing() throws {
        let flat = Bitmap.drawing(width: 512, height: 512) { x, _ in x < 256 ? (30, 60, 90, 255) : (200, 10, 10, 128) }
        let data = try ImageEncoders.PNG().encode(flat)
        #expect(data.count < 4096, "\(data.count) bytes for two flat halves")
        #expect(try ImageDecoders.PNG().decode(data, context: decodingContext(.png)) == flat)
    }

    @Test func aPhotoThumbnailIsAboutAsSmallAsWithLibpngsDefaults() throws {
        let photo = try ImageDecoders.JPEG().decode(
            try Fixtures.data("exif-orientation", "Landscape_1.jpg"), context: decodingContext(.jpeg))
        let thumbnail = photo.resized(to: PixelSize(width: 320, height: 213))
        let ours = try ImageEncoders.PNG().encode(thumbnail)
        let defaults = try libpngDefaultEncoding(thumbnail)
        #expect(try ImageDecoders.PNG().decode(ours, context: decodingContext(.png)) == thumbnail)
        #expect(
            Double(ours.count) < Double(defaults.count) * 1.1, "ours \(ours.count), libpng's defaults \(defaults.count)"
        )
    }

    /// The image as libpng's simplified API writes it: every filter, zlib's default level.
    private func libpngDefaultEncoding(_ bitmap: Bitmap) throws -> Data {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(bitmap.width)
        image.height = UInt32(bitmap.height)
        image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        defer { png_image_free(&image) }
        var written = bitmap.byteCount * 2 + 4096
        var output = Data(count: written)
        let succeeded = output.withUnsafeMutableBytes { memory in
            bitmap.pixels.withUnsafeBytes { pixels in
                png_image_write_to_memory(&image, memory.baseAddress, &written, 0, pixels.baseAddress, 0, nil)
            }
        }
        try #require(succeeded != 0)
        return output.prefix(written)
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

    /// A bitmap with a side over what the format allows (JPEG 65,500 px, libpng 1,000,000) is refused
    /// with its size and the limit. Before, both encoders said "corrupt data (invalid arguments)" of a
    /// bitmap that is fine: the C wrappers' message for arguments they turn away.
    @Test(arguments: [(65_501, 1), (1, 65_501)])
    func aBitmapTooLargeForJPEGIsRefusedWithItsSizeAndTheLimit(width: Int, height: Int) {
        let bitmap = Bitmap(width: width, height: height, pixels: Array(repeating: 200, count: width * height * 4))
        let error = encodingError { () throws(ImageDecodingError) in try ImageEncoders.JPEG().encode(bitmap) }
        #expect(
            error?.description == "JPEG: unsupported feature (\(width)x\(height) px: JPEG's sides are at most 65500 px)"
        )
        // The largest side JPEG allows still encodes.
        let largest = Bitmap(width: 65_500, height: 1, pixels: Array(repeating: 200, count: 65_500 * 4))
        #expect(throws: Never.self) { try ImageEncoders.JPEG().encode(largest) }
    }

    @Test(arguments: [(1_000_001, 1), (1, 1_000_001)])
    func aBitmapTooLargeForPNGIsRefusedWithItsSizeAndTheLimit(width: Int, height: Int) {
        let bitmap = Bitmap(width: width, height: height, pixels: Array(repeating: 200, count: width * height * 4))
        let error = encodingError { () throws(ImageDecodingError) in try ImageEncoders.PNG().encode(bitmap) }
        #expect(
            error?.description == "PNG: unsupported feature (\(width)x\(height) px: PNG's sides are at most 1000000 px)"
        )
    }

    private func encodingError(_ body: () throws(ImageDecodingError) -> Data) -> ImageDecodingError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }
}

@Suite("Default decoder")
struct DefaultDecoderTests {
    @Test(arguments: [
        ("jpeg", "testorig.jpg"), ("pngsuite", "basn6a08.png"), ("webp", "lossy_alpha.webp"), ("gif", "beacon.gif"),
        ("heif", "photo.heic"), ("heif", "photo.avif"),
    ])
    func itDecodesEachFormatWithItsCodec(folder: String, name: String) throws {
        let data = try Fixtures.data(folder, name)
        let format = try ImageHeader.parse(data).format
        let context = decodingContext(format)
        let codecs: [ImageFormat: any ImageDecoding] = [
            .jpeg: ImageDecoders.JPEG(), .png: ImageDecoders.PNG(), .webp: ImageDecoders.WebP(),
            .gif: ImageDecoders.GIF(), .heif: ImageDecoders.HEIF(), .avif: ImageDecoders.HEIF(),
        ]
        let codec = try #require(codecs[format])
        #expect(try ImageDecoders.Default().decode(data, context: context) == codec.decode(data, context: context))
    }

    @Test func bmpIsUnsupportedForNow() {
        let format = ImageFormat.bmp
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
