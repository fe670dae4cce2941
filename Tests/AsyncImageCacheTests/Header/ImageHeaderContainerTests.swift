import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct ImageHeaderContainerTests {
    @Test func pngSizeComesFromIHDR() throws {
        let header = try ImageHeader.parse(SyntheticHeaders.png(width: 300, height: 200))
        #expect(header == ImageHeader(format: .png, storedSize: PixelSize(width: 300, height: 200)))
    }

    @Test(arguments: [true, false])
    func pngOrientationComesFromAnExifChunkBeforeTheImageData(bigEndian: Bool) throws {
        let exif = SyntheticHeaders.tiff(orientation: 8, bigEndian: bigEndian)
        let header = try ImageHeader.parse(SyntheticHeaders.png(width: 300, height: 200, exif: exif))
        #expect(header.orientation == .left)
        #expect(header.displaySize == PixelSize(width: 200, height: 300))
    }

    @Test func gif87aIsRecognisedToo() throws {
        // The screen descriptor, then the first image's descriptor: a 320x240 image at (0, 0).
        let bytes = Data(
            Array("GIF87a".utf8) + [0x40, 0x01, 0xF0, 0x00, 0, 0, 0] + [0x2C, 0, 0, 0, 0, 0x40, 0x01, 0xF0, 0x00, 0])
        #expect(
            try ImageHeader.parse(bytes) == ImageHeader(format: .gif, storedSize: PixelSize(width: 320, height: 240)))
    }

    @Test func lossyWebPSizesIgnoreTheScalingBits() throws {
        let data = SyntheticHeaders.webp([SyntheticHeaders.vp8Chunk(width: 16383, height: 2, scaleBits: 3)])
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 16383, height: 2))
    }

    @Test func losslessWebPSizesAreFourteenBitsEachPlusOne() throws {
        let data = SyntheticHeaders.webp([SyntheticHeaders.vp8lChunk(width: 16384, height: 3)])
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 16384, height: 3))
    }

    /// A type's bytes reach the error message as text: a control byte would put a line break or an
    /// escape sequence into a log line, so it shows as `?`, as bytes past ASCII do.
    @Test func anUnknownChunkTypeIsNamedInTheErrorWithItsUnprintableBytesReplaced() {
        // A line feed, an escape and a delete after the V, then a chunk size and a payload.
        let chunk: [UInt8] = [0x56, 0x0A, 0x1B, 0x7F, 16, 0, 0, 0] + [UInt8](repeating: 0, count: 16)
        #expect(throws: ImageDecodingError(format: .webp, reason: .corrupt("unknown first chunk 'V???'"))) {
            try ImageHeader.parse(SyntheticHeaders.webp([chunk]))
        }
    }

    @Test func extendedWebPCanvasIsTwentyFourBitsPlusOne() throws {
        let data = SyntheticHeaders.webpExtended(width: 70_000, height: 5)
        #expect(
            try ImageHeader.parse(data) == ImageHeader(format: .webp, storedSize: PixelSize(width: 70_000, height: 5)))
    }

    @Test(arguments: [true, false])
    func extendedWebPOrientationComesFromItsExifChunk(bigEndian: Bool) throws {
        let exif = SyntheticHeaders.tiff(orientation: 6, bigEndian: bigEndian)
        let header = try ImageHeader.parse(SyntheticHeaders.webpExtended(width: 40, height: 30, exif: exif))
        #expect(header == ImageHeader(format: .webp, storedSize: PixelSize(width: 40, height: 30), orientation: .right))
    }

    @Test(arguments: [true, false])
    func bmpSizeComesFromEitherHeaderKind(core: Bool) throws {
        let header = try ImageHeader.parse(SyntheticHeaders.bmp(width: 123, height: 45, core: core))
        #expect(header == ImageHeader(format: .bmp, storedSize: PixelSize(width: 123, height: 45)))
    }

    @Test func topDownBmpReportsThePositiveHeight() throws {
        let header = try ImageHeader.parse(SyntheticHeaders.bmp(width: 64, height: -48, core: false))
        #expect(header.storedSize == PixelSize(width: 64, height: 48))
    }

    /// A primary item (1) with a 4000x3000 ispe, a quarter turn anticlockwise and a top-bottom
    /// mirror, plus a thumbnail item (2) with its own ispe.
    static func photo(majorBrand: String, compatibleBrands: [String], primaryItem: Int? = 1) -> Data {
        SyntheticHeaders.heif(
            majorBrand: majorBrand, compatibleBrands: compatibleBrands, primaryItem: primaryItem,
            properties: [
                SyntheticHeaders.ispe(width: 320, height: 240),
                SyntheticHeaders.ispe(width: 4000, height: 3000),
                SyntheticHeaders.box("irot", [1]),
                SyntheticHeaders.box("imir", [0]),
            ],
            associations: [(item: 1, properties: [2, 3, 4]), (item: 2, properties: [1])]
        )
    }

    @Test func heifSizeAndOrientationComeFromThePrimaryItem() throws {
        let header = try ImageHeader.parse(Self.photo(majorBrand: "heic", compatibleBrands: ["mif1", "heic"]))
        // Turning anticlockwise and then exchanging top and bottom is a transpose (EXIF 5).
        #expect(
            header
                == ImageHeader(
                    format: .heif, storedSize: PixelSize(width: 4000, height: 3000), orientation: .leftMirrored))
    }

    @Test func avifIsToldApartByItsBrands() throws {
        #expect(try ImageHeader.parse(Self.photo(majorBrand: "avif", compatibleBrands: ["mif1"])).format == .avif)
        #expect(
            try ImageHeader.parse(Self.photo(majorBrand: "mif1", compatibleBrands: ["miaf", "avif"])).format == .avif)
        #expect(try ImageHeader.parse(Self.photo(majorBrand: "mif1", compatibleBrands: ["heic"])).format == .heif)
    }

    @Test func isobmffWithoutAnImageBrandIsUnrecognised() {
        #expect(throws: ImageDecodingError(format: nil, reason: .unrecognizedFormat)) {
            try ImageHeader.parse(Self.photo(majorBrand: "isom", compatibleBrands: ["mp41"]))
        }
    }

    @Test func heifWithoutAPrimaryItemFallsBackToTheLargestExtent() throws {
        let header = try ImageHeader.parse(Self.photo(majorBrand: "heic", compatibleBrands: [], primaryItem: nil))
        #expect(header == ImageHeader(format: .heif, storedSize: PixelSize(width: 4000, height: 3000)))
    }

    @Test(
        arguments: [
            (0, nil, ImageOrientation.up), (1, nil, .left), (2, nil, .down), (3, nil, .right),
            (0, 0, .downMirrored), (0, 1, .upMirrored), (2, 0, .upMirrored), (2, 1, .downMirrored),
            (1, 1, .rightMirrored), (3, 0, .rightMirrored), (3, 1, .leftMirrored),
        ] as [(Int, Int?, ImageOrientation)])
    func heifRotationAndMirrorMapToExifOrientation(quarterTurns: Int, axis: Int?, expected: ImageOrientation) throws {
        var properties = [
            SyntheticHeaders.ispe(width: 10, height: 20), SyntheticHeaders.box("irot", [UInt8(quarterTurns)]),
        ]
        if let axis { properties.append(SyntheticHeaders.box("imir", [UInt8(axis)])) }
        let data = SyntheticHeaders.heif(
            majorBrand: "heic", compatibleBrands: [], primaryItem: 7, properties: properties,
            associations: [(item: 7, properties: Array(1...properties.count))])
        #expect(try ImageHeader.parse(data).orientation == expected)
    }
}
