import Foundation
import Testing

@testable import AsyncImageCache

/// The portable arithmetic behind the Apple adapters (ImageIO decoding, `UIImage`/`NSImage` bridging),
/// tested here because no Apple machine runs these tests.
@Suite struct AppleAdapterSupportTests {
    static func context(stored: PixelSize, minimum: PixelSize?) -> ImageDecodingContext {
        ImageDecodingContext(header: ImageHeader(format: .jpeg, storedSize: stored), minimumSize: minimum)
    }

    @Test func theCoveringSizeKeepsTheAspectRatioAndCoversTheMinimum() {
        let photo = PixelSize(width: 1800, height: 1200)
        #expect(
            Self.context(stored: photo, minimum: PixelSize(width: 320, height: 200)).coveringSize
                == PixelSize(width: 320, height: 214))
        #expect(
            Self.context(stored: photo, minimum: PixelSize(width: 300, height: 213)).coveringSize
                == PixelSize(width: 320, height: 213))
        // Exact ratios stay exact: the binding side is never rounded one over.
        #expect(
            Self.context(stored: photo, minimum: PixelSize(width: 954, height: 636)).coveringSize
                == PixelSize(width: 954, height: 636))
        for width in 1..<1800 {
            let minimum = PixelSize(width: width, height: max(1, width * 2 / 3))
            let covering = Self.context(stored: photo, minimum: minimum).coveringSize
            #expect(covering.width >= minimum.width && covering.height >= minimum.height, "\(minimum)")
            #expect(covering.width <= width + 1 && covering.height <= minimum.height + 1, "\(minimum)")
        }
    }

    @Test func noMinimumOrOneNotSmallerThanTheImageMeansTheFullSize() {
        let stored = PixelSize(width: 640, height: 480)
        #expect(Self.context(stored: stored, minimum: nil).coveringSize == stored)
        #expect(Self.context(stored: stored, minimum: stored).coveringSize == stored)
        #expect(Self.context(stored: stored, minimum: PixelSize(width: 100, height: 480)).coveringSize == stored)
        #expect(Self.context(stored: stored, minimum: PixelSize(width: 5000, height: 10)).coveringSize == stored)
    }

    @Test func premultiplyingAndBackLosesNoMoreThanTheRoundingAllows() {
        // Every colour value at every alpha: rounding twice costs at most 127.5 / alpha + 0.5.
        var pixels: [UInt8] = []
        for alpha in 0...255 {
            for value in 0...255 { pixels += [UInt8(value), UInt8(255 - value), 128, UInt8(alpha)] }
        }
        let bitmap = Bitmap(width: 256, height: 256, pixels: pixels)
        let back = Bitmap(width: 256, height: 256, premultipliedPixels: bitmap.premultipliedPixels)
        var outOfTolerance: [String] = []
        for offset in stride(from: 0, to: pixels.count, by: 4) {
            let alpha = Double(pixels[offset + 3])
            for channel in offset..<offset + 3 {
                let expected = alpha == 0 ? 0 : Int(pixels[channel])
                let tolerance = alpha == 0 ? 0 : 127.5 / alpha + 0.5
                if Double(abs(Int(back.pixels[channel]) - expected)) > tolerance {
                    outOfTolerance.append("\(pixels[channel]) at alpha \(alpha) came back \(back.pixels[channel])")
                }
            }
        }
        #expect(outOfTolerance.isEmpty, "\(outOfTolerance.prefix(5))")
        #expect(back.alphaValues == bitmap.alphaValues)
    }

    @Test func premultipliedValuesAreExact() {
        let bitmap = Bitmap(width: 3, height: 1, pixels: [255, 128, 0, 128, 200, 100, 50, 255, 9, 9, 9, 0])
        #expect(bitmap.premultipliedPixels == [128, 64, 0, 128, 200, 100, 50, 255, 0, 0, 0, 0])
        // Colour above alpha is not valid premultiplied data: it clamps to 255 rather than wrapping.
        let clamped = Bitmap(width: 1, height: 1, premultipliedPixels: [200, 64, 0, 128])
        #expect(clamped.pixels == [255, 128, 0, 128])
    }

    /// A JPEG fixture claiming `size` in its frame header, with the context ImageIO is asked to decode it in.
    static func jpeg(_ name: String, claiming size: PixelSize, minimum: PixelSize) throws -> (
        Data, ImageDecodingContext
    ) {
        var data = try Fixtures.data("jpeg", name)
        let frame = try #require(StoredSize.jpegFrameOffset(data))
        data.replaceSubrange(
            frame + 5..<frame + 9,
            with: [
                UInt8(size.height >> 8), UInt8(size.height & 0xFF), UInt8(size.width >> 8), UInt8(size.width & 0xFF),
            ])
        return (data, ImageDecodingContext(header: try ImageHeader.parse(data), minimumSize: minimum))
    }

    @Test func aProgressiveJPEGIsCheckedAtItsFullSizeEvenWhenAThumbnailIsAskedFor() throws {
        // Its coefficients for the whole 30000x30000 image are held whatever the scale (several gigabytes).
        let (data, context) = try Self.jpeg(
            "video-001.progressive.jpeg", claiming: PixelSize(width: 30000, height: 30000),
            minimum: PixelSize(width: 100, height: 100))
        #expect(context.imageIODecodedPixels(of: data) == 900_000_000)
        // One interleaved scan decodes at a reduced scale, 1/8 at the least: 3750x3750 is held for 100x100.
        let (baseline, baselineContext) = try Self.jpeg(
            "video-001.q50.420.jpeg", claiming: PixelSize(width: 30000, height: 30000),
            minimum: PixelSize(width: 100, height: 100))
        #expect(baselineContext.imageIODecodedPixels(of: baseline) == 3750 * 3750)
        // Asked for more than an eighth, the covering size is what is held.
        let (large, largeContext) = try Self.jpeg(
            "video-001.q50.420.jpeg", claiming: PixelSize(width: 30000, height: 30000),
            minimum: PixelSize(width: 6000, height: 6000))
        #expect(largeContext.imageIODecodedPixels(of: large) == 6000 * 6000)
    }

    @Test(arguments: ["declares-64-codes-4096.heic", "declares-64-codes-4096.avif"])
    func aHEIFThatCodesMoreThanItDeclaresIsCheckedAtItsCodedSize(name: String) throws {
        let data = try Fixtures.data("heif", name)
        let context = ImageDecodingContext(
            header: try ImageHeader.parse(data), minimumSize: PixelSize(width: 32, height: 32))
        #expect(context.header.storedSize == PixelSize(width: 64, height: 64))
        #expect(context.imageIODecodedPixels(of: data) == 4096 * 4096)
    }

    @Test func aSequentialJPEGWhoseFirstScanCodesOneComponentIsMultiScan() {
        // SOI; SOF0 of 3 components, 16x16; SOS of the first component alone.
        var bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8, 0, 16, 0, 16, 3]
        bytes += [1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1]
        bytes += [0xFF, 0xDA, 0, 8, 1, 1, 0x00, 0, 63, 0]
        #expect(ImageHeader.jpegHasMultipleScans(Data(bytes)))
        // The same with all three components in the first scan.
        bytes.replaceSubrange(
            bytes.count - 10..<bytes.count, with: [0xFF, 0xDA, 0, 12, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 63, 0])
        #expect(!ImageHeader.jpegHasMultipleScans(Data(bytes)))
        // Headers that cannot be read that far count as multi-scan: the full size is checked.
        #expect(ImageHeader.jpegHasMultipleScans(Data(bytes.prefix(14))))
    }

    #if os(Linux)
    /// Every fixture's full size is checked exactly when the Linux decoder checks it (libjpeg's
    /// `has_multiple_scans`, or `arith_code`): claiming 30000x30000 and asked for 100x100, the Linux
    /// decoder refuses the files that hold the whole image while they decode or are arithmetic-coded
    /// (testimgari.jpg), and only those.
    @Test(arguments: (try? Fixtures.files(in: "jpeg", withExtensions: ["jpg", "jpeg"])) ?? [])
    func theFilesCheckedAtFullSizeAreTheOnesTheLinuxDecoderChecksAtFullSize(name: String) throws {
        let (data, context) = try Self.jpeg(
            name, claiming: PixelSize(width: 30000, height: 30000), minimum: PixelSize(width: 100, height: 100))
        let error = decodingError { () throws(ImageDecodingError) in
            try ImageDecoders.JPEG().decode(data, context: context)
        }
        let linuxRefuses = error?.reason == .pixelBudgetExceeded(pixels: 900_000_000, budget: context.pixelBudget)
        #expect((context.imageIODecodedPixels(of: data) == 900_000_000) == linuxRefuses)
    }

    /// The cases above are there, and both answers occur among them: a progressive file and the
    /// arithmetic-coded one are counted at full size, a baseline one is not.
    @Test func theFilesCheckedAtFullSizeIncludeBothKinds() throws {
        #expect(try Fixtures.files(in: "jpeg", withExtensions: ["jpg", "jpeg"]).count == 23)
        let minimum = PixelSize(width: 100, height: 100)
        for (name, full) in [("testimgari.jpg", true), ("video-001.progressive.jpeg", true), ("testorig.jpg", false)] {
            let (data, context) = try Self.jpeg(
                name, claiming: PixelSize(width: 30000, height: 30000), minimum: minimum)
            #expect((context.imageIODecodedPixels(of: data) == 900_000_000) == full, "\(name)")
        }
    }
    #endif

    @Test func opaqueMeansEveryAlphaIs255() {
        #expect(Bitmap(width: 2, height: 1, pixels: [1, 2, 3, 255, 4, 5, 6, 255]).isOpaque)
        #expect(!Bitmap(width: 2, height: 1, pixels: [1, 2, 3, 255, 4, 5, 6, 254]).isOpaque)
    }
}
