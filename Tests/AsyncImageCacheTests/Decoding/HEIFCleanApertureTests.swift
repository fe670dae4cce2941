#if os(Linux)
import CHEIF
#endif
import Foundation
import Testing

@testable import AsyncImageCache

/// The clean aperture (`clap`) of HEIF files: the crop's arithmetic, the header's size, and, on Linux,
/// the decoder's crop against libheif's own rendering of the same files.
@Suite("HEIF clean aperture")
struct HEIFCleanApertureTests {
    /// An aperture from plain numbers: width, height, horizontal and vertical offset, each as n/d.
    static func aperture(_ fields: [Int]) -> HEIFCleanAperture? {
        HEIFCleanAperture(fields: fields.map { $0 < 0 ? $0 + (1 << 32) : $0 })
    }

    @Test func aCentredApertureCropsEvenlyOnBothSides() throws {
        let centred = try #require(Self.aperture([80, 1, 40, 1, 0, 1, 0, 1]))
        let crop = try #require(centred.crop(in: PixelSize(width: 100, height: 60)))
        #expect(crop == (x: 10, y: 10, width: 80, height: 40))
        #expect(centred.shownSize(of: PixelSize(width: 100, height: 60)) == PixelSize(width: 80, height: 40))
    }

    @Test func offsetsMoveTheCentreAndHalfPixelEdgesRoundAsLibheifRoundsThem() throws {
        // Centre 6 right and 2 up, given in halves.
        let moved = try #require(Self.aperture([70, 1, 80, 2, 12, 2, -4, 2]))
        #expect(try #require(moved.crop(in: PixelSize(width: 90, height: 64))) == (x: 16, y: 10, width: 70, height: 40))
        // Edges at 5.5 (column) and 4.5 (row): libheif takes the column toward zero and the row half up.
        let half = try #require(Self.aperture([10, 1, 10, 1, 1, 2, -1, 2]))
        #expect(try #require(half.crop(in: PixelSize(width: 20, height: 20))) == (x: 5, y: 5, width: 10, height: 10))
        // A left edge at -0.5 goes toward zero, to 0, and the last column follows from there: 80 columns.
        let leftEdge = try #require(Self.aperture([80, 1, 10, 1, -11, 2, 0, 1]))
        #expect(
            try #require(leftEdge.crop(in: PixelSize(width: 90, height: 64))) == (x: 0, y: 27, width: 80, height: 10))
        // A fractional width rounds half up: 21/2 is 11 columns.
        let fractional = try #require(Self.aperture([21, 2, 10, 1, 0, 1, 0, 1]))
        #expect(try #require(fractional.crop(in: PixelSize(width: 21, height: 10))).width == 11)
    }

    @Test func anApertureReachingPastTheImageIsClippedAndOneOutsideItShowsNothing() throws {
        // First column: -40 + (100 - 1) / 2 - (40 - 1) / 2 = -10; columns -10 to 29 keep 0 to 29.
        let clipped = try #require(Self.aperture([40, 1, 10, 1, -40, 1, 0, 1]))
        #expect(
            try #require(clipped.crop(in: PixelSize(width: 100, height: 10))) == (x: 0, y: 0, width: 30, height: 10))
        let outside = try #require(Self.aperture([40, 1, 10, 1, 500, 1, 0, 1]))
        #expect(outside.crop(in: PixelSize(width: 100, height: 10)) == nil)
        // libheif refuses a crop of a single column.
        let sliver = try #require(Self.aperture([1, 1, 10, 1, 0, 1, 0, 1]))
        #expect(sliver.crop(in: PixelSize(width: 100, height: 10)) == nil)
        // The header's size ignores the offsets and never exceeds the image.
        let wide = try #require(Self.aperture([400, 1, 10, 1, 0, 1, 0, 1]))
        #expect(wide.shownSize(of: PixelSize(width: 100, height: 10)) == PixelSize(width: 100, height: 10))
    }

    @Test func unusableNumbersMakeNoApertureAndHugeOnesNoCrop() throws {
        #expect(Self.aperture([80, 0, 40, 1, 0, 1, 0, 1]) == nil)  // a zero denominator
        #expect(Self.aperture([80, 1, 40, 1, 0, 1, 0, 0]) == nil)
        #expect(Self.aperture([0, 1, 40, 1, 0, 1, 0, 1]) == nil)  // nothing wide
        #expect(Self.aperture([80, 1, 40, 1]) == nil)  // too few fields
        // Numbers at the limits of their 32 bits, never a trap: a usable aperture (each denominator positive, the
        // width and height below 2^31) whose edges overflow, or lie far outside any image: no crop.
        let limits = [
            Int(Int32.max), Int(UInt32.max), Int(Int32.max), 1, Int(Int32.min), 1, Int(Int32.max), Int(UInt32.max),
        ]
        let huge = try #require(Self.aperture(limits))
        for size in [PixelSize(width: 1, height: 1), PixelSize(width: 1 << 30, height: 1 << 30)] {
            #expect(huge.crop(in: size) == nil, "\(size)")
        }
    }

    @Test func aClapBoxOfTheWrongLengthIsCorrupt() throws {
        // A clap box with 28 bytes of content instead of 32, alone in a property list.
        var bytes = [UInt8](repeating: 0, count: 36)
        bytes[3] = 36
        bytes.replaceSubrange(4..<8, with: Array("clap".utf8))
        let file = HEIFBoxes(bytes: HeaderBytes(Data(bytes), format: .heif))
        let clap = try file.box(at: 0, parentEnd: bytes.count)
        #expect(throws: ImageDecodingError.self) { try file.cleanApertures(among: [clap]) }
    }

    @Test(arguments: [
        ("cropped.heic", PixelSize(width: 90, height: 60), ImageOrientation.up),
        ("cropped-offset.heic", PixelSize(width: 70, height: 40), .up),
        ("cropped-offset-rotated-6.heic", PixelSize(width: 70, height: 40), .right),
        ("cropped-halves.heic", PixelSize(width: 50, height: 31), .up),
        ("cropped-left-edge.heic", PixelSize(width: 80, height: 10), .up),
    ])
    func theHeaderReadsTheCroppedSize(name: String, stored: PixelSize, orientation: ImageOrientation) throws {
        let header = try ImageHeader.parse(try Fixtures.data("heif", name))
        #expect(header.storedSize == stored)
        #expect(header.orientation == orientation)
        #expect(ImageHeader.heifCleanApertures(in: try Fixtures.data("heif", "photo.heic")).isEmpty)
    }

    #if os(Linux)
    @Test(arguments: [
        "cropped.heic", "cropped-offset.heic", "cropped-offset-rotated-6.heic", "cropped-halves.heic",
        "cropped-left-edge.heic",
    ])
    func throughTheStoreACroppedFileLooksAsLibheifShowsIt(name: String) async throws {
        // The reference is libheif 1.15 decoding the same file with its transformations applied (clap,
        // then irot), written by scripts/make-heif-fixtures; the decoder crops, the store turns.
        let reference = try ImageDecoders.PNG().decode(
            try Fixtures.data("heif", name.replacingOccurrences(of: ".heic", with: ".libheif.png")),
            context: decodingContext(.png))
        let data = try Fixtures.data("heif", name)
        let header = try ImageHeader.parse(data)
        #expect(header.displaySize == reference.pixelSize)
        // libheif 1.15 wrote these with the cropped size as their ispe, their picture coded 90x64: 1.22 and later
        // refuse them, and show nothing.
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            try await HEIFDecoderTests.expectRefusedAsCodedAtAnotherSize(data, named: name)
            #expect(HEIFCleanAperturesTests.libheifDecodeError(data) == heif_error_Invalid_input)
            return
        }
        let image = try await HEIFDecoderTests.loadedThroughAStore(name, widths: [nil])[0]
        #expect(image.pixelSize == reference.pixelSize)
        let largest = zip(image.pixels, reference.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(largest == 0)
    }

    @Test func theOffsetCropShowsTheSourcePictureFromWhereTheApertureSays() async throws {
        // The coded picture is source.png from (3, 2), 90x60, padded to 90x64; the aperture shows
        // 70x40 of it from (16, 10): the source from (19, 12). Checked against the picture itself, not
        // against libheif's idea of the aperture.
        let data = try Fixtures.data("heif", "cropped-offset.heic")
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            try await HEIFDecoderTests.expectRefusedAsCodedAtAnotherSize(data, named: "cropped-offset.heic")
            return
        }
        let bitmap = try ImageDecoders.HEIF().decode(
            data, context: ImageDecodingContext(header: try ImageHeader.parse(data)))
        let source = try HEIFDecoderTests.source()
        func psnr(from x: Int, _ y: Int) -> Double {
            var region: [UInt8] = []
            for row in y..<(y + 40) {
                let start = (row * source.width + x) * 4
                region += source.pixels[start..<(start + 70 * 4)]
            }
            return HEIFDecoderTests.psnr(bitmap, Bitmap(width: 70, height: 40, pixels: region))
        }
        let there = psnr(from: 19, 12)
        #expect(there > 27, "\(there) dB")
        // A pixel off in any direction matches clearly worse.
        for (x, y) in [(18, 12), (20, 12), (19, 11), (19, 13)] {
            let off = psnr(from: x, y)
            #expect(off < there - 2, "from (\(x), \(y)): \(off) dB, against \(there) dB")
        }
    }

    /// cropped.heic (coded 90x64, ispe 90x60) with its `clap` rewritten in place.
    static func croppedFile(clap fields: [Int]) throws -> Data {
        var bytes = [UInt8](try Fixtures.data("heif", "cropped.heic"))
        let start = try #require(Data(bytes).range(of: Data("clap".utf8))).upperBound
        for (index, field) in fields.enumerated() {
            let value = UInt32(truncatingIfNeeded: field)
            bytes.replaceSubrange(
                (start + index * 4)..<(start + index * 4 + 4),
                with: [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
        }
        return Data(bytes)
    }

    @Test func anApertureReachingPastThePictureStillGivesTheSizeTheHeaderRead() async throws {
        // 90x60 centred 2 columns right of the 90x64 picture: libheif would cut it to 88 columns.
        let data = try Self.croppedFile(clap: [90, 1, 60, 1, 2, 1, 0, 1])
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 90, height: 60))
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            try await HEIFDecoderTests.expectRefusedAsCodedAtAnotherSize(data, named: "cropped-past-the-edge.heic")
            return
        }
        let bitmap = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == header.storedSize)
    }

    @Test func anApertureOutsideThePictureIsCorrupt() throws {
        let data = try Self.croppedFile(clap: [40, 1, 40, 1, 500, 1, 0, 1])
        let header = try ImageHeader.parse(data)
        let error = decodingError { () throws(ImageDecodingError) in
            try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        }
        #expect(error?.format == .heif)
        // libheif 1.22 and later refuse the picture before the decoder looks at its aperture.
        let refusal =
            HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared
            ? HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif).reason
            : .corrupt("the clean aperture lies outside the picture")
        #expect(error?.reason == refusal)
    }

    @Test func aThumbnailWithAnApertureOfItsOwnIsPassedOver() throws {
        // The photo whole (no clap); its 48x32 thumbnail is coded 64x64 and cropped by a clap of its own.
        let data = try Fixtures.data("heif", "thumbnail-cropped.heic")
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        let bitmap = try ImageDecoders.HEIF().decode(
            data, context: ImageDecodingContext(header: header, minimumSize: PixelSize(width: 40, height: 27)))
        #expect(bitmap.pixelSize == PixelSize(width: 96, height: 64))
        #expect(HEIFDecoderTests.psnr(bitmap, try HEIFDecoderTests.source()) > 30)
    }

    @Test func aCroppedFileCodesItsPaddedSize() throws {
        let coded = try #require(HEIFCodedSize.largest(in: try Fixtures.data("heif", "cropped-offset.heic")))
        #expect(coded == PixelSize(width: 96, height: 64))
    }
    #endif
}
