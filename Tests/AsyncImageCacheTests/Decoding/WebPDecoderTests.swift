#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

@Suite("WebP decoder")
struct WebPDecoderTests {
    static let corpus = (try? Fixtures.files(in: "webp", withExtensions: ["webp"])) ?? []
    static let withAlpha = ["lossy_alpha.webp", "yellow_rose.lossless.webp", "yellow_rose.lossy-with-alpha.webp"]

    let decoder = ImageDecoders.WebP()

    func decode(_ name: String, minimumSize: PixelSize? = nil) throws -> Bitmap {
        try decoder.decode(try Fixtures.data("webp", name), context: decodingContext(.webp, minimumSize: minimumSize))
    }

    @Test func theCorpusHoldsEveryFileItsReadmeLists() {
        #expect(Self.corpus.count == 12)
        #expect(Set(Self.withAlpha).isSubset(of: Self.corpus))
    }

    @Test(arguments: corpus)
    func everyFileDecodesAtTheCanvasSizeOfItsHeader(name: String) throws {
        let data = try Fixtures.data("webp", name)
        #expect(
            try decoder.decode(data, context: decodingContext(.webp)).pixelSize == ImageHeader.parse(data).storedSize)
    }

    @Test(arguments: withAlpha)
    func alphaSurvivesLossyAndLosslessCompression(name: String) throws {
        let alpha = try decode(name).alphaValues
        #expect(alpha.contains(0))
        #expect(alpha.contains(255))
    }

    @Test func aFileWithoutAlphaIsOpaque() throws {
        #expect(try decode("yellow_rose.lossy.webp").alphaValues.allSatisfy { $0 == 255 })
        #expect(try decode("blue-purple-pink.lossless.webp").alphaValues.allSatisfy { $0 == 255 })
    }

    /// A still lossy picture with alpha of up to 4 megapixels comes out at full size: libwebp's scaling would
    /// darken its edges (see DrawnPixelsTests' fringe test), and the caller's resize does not.
    @Test func aSmallLossyWebPWithAlphaDecodesAtFullSize() throws {
        let full = try decode("yellow_rose.lossy-with-alpha.webp")
        #expect(try decode("yellow_rose.lossy-with-alpha.webp", minimumSize: PixelSize(width: 100, height: 50)) == full)
        #expect(full.pixelSize == PixelSize(width: 400, height: 301) && !full.isOpaque)
    }

    @Test(arguments: ["yellow_rose.lossy.webp", "yellow_rose.lossless.webp"])
    func aScaledDecodeCoversTheMinimumSizeAndLooksLikeTheFullPictureResized(name: String) throws {
        let minimum = PixelSize(width: 100, height: 50)
        let scaled = try decode(name, minimumSize: minimum)
        // The width binds: 301 * 100 / 400 = 75.25, rounded up.
        #expect(scaled.pixelSize == PixelSize(width: 100, height: 76))
        #expect(scaled.width >= minimum.width && scaled.height >= minimum.height)
        let full = try decode(name)
        #expect(scaled.pixelSize.pixelCount < full.pixelSize.pixelCount)
        // libwebp's scaler and our Lanczos filter differ a little (measured: about 1 of 255); the same picture
        // upside down is about 60 off. Colors are compared premultiplied, as they show: libwebp and the resize
        // leave different colors under (nearly) transparent pixels.
        let resized = full.resized(to: scaled.pixelSize)
        #expect(Self.premultipliedDifference(scaled, resized) < 3)
        #expect(Self.premultipliedDifference(scaled, resized.oriented(.down)) > 20)
    }

    /// The mean absolute difference of the premultiplied red, green and blue samples of two bitmaps of one size.
    static func premultipliedDifference(_ first: Bitmap, _ second: Bitmap) -> Double {
        var total = 0.0
        for offset in stride(from: 0, to: first.pixels.count, by: 4) {
            let (alpha, otherAlpha) = (Double(first.pixels[offset + 3]), Double(second.pixels[offset + 3]))
            for channel in offset..<offset + 3 {
                total += abs(Double(first.pixels[channel]) * alpha - Double(second.pixels[channel]) * otherAlpha) / 255
            }
        }
        return total / Double(first.pixels.count / 4 * 3)
    }

    @Test func aMinimumSizeAtLeastTheImagesGivesTheFullImage() throws {
        let full = try decode("test.webp")
        #expect(try decode("test.webp", minimumSize: PixelSize(width: 128, height: 10)) == full)
        #expect(try decode("test.webp", minimumSize: PixelSize(width: 500, height: 500)) == full)
    }

    @Test func aLosslessFileIsDecodedExactly() throws {
        // lossless_indexed_1bit_palette.webp holds two colors only: a lossless decode may not invent a third.
        let bitmap = try decode("lossless_indexed_1bit_palette.webp")
        var colors = Set<[UInt8]>()
        for offset in stride(from: 0, to: bitmap.pixels.count, by: 4) {
            colors.insert(Array(bitmap.pixels[offset..<offset + 4]))
        }
        #expect(colors.count == 2)
    }
}
#endif
