#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A primary HEVC or AV1 image without the `ispe` HEIF asks of it: libheif decodes the picture its sequence
/// parameter set (less the conformance window) or its sequence header codes, and the header reads that size
/// and the item's own properties, not another item's `ispe`.
@Suite("HEIF coded image without an ispe")
struct HEIFCodedImageWithoutExtentTests {
    /// The fixture `name` with the `ispe` of `width` x `height` (the primary image's) renamed `free` in place.
    static func withoutExtent(_ name: String, width: UInt8, height: UInt8) throws -> Data {
        var bytes = [UInt8](try Fixtures.data("heif", name))
        let ispe: [UInt8] = [0, 0, 0, 20] + Array("ispe".utf8) + [0, 0, 0, 0, 0, 0, 0, width, 0, 0, 0, height]
        let start = try #require(
            (0...(bytes.count - ispe.count)).first { bytes[$0..<($0 + ispe.count)].elementsEqual(ispe) })
        bytes.replaceSubrange((start + 4)..<(start + 8), with: Array("free".utf8))
        return Data(bytes)
    }

    @Test(
        arguments: [
            // 96x64 with a 48x32 thumbnail, a grid of one 64x64 coded tile: the largest other ispe is 64x64.
            ("thumbnail.heic", 96, 64, PixelSize(width: 96, height: 64), ImageOrientation.up),
            // 96x64 turned for display: nothing else declares a size.
            ("rotated-6.heic", 96, 64, PixelSize(width: 96, height: 64), .right),
            // Coded 90x64 in a picture padded to whole blocks, declared 90x60, cropped by its clap to 70x40.
            ("cropped-offset.heic", 90, 60, PixelSize(width: 70, height: 40), .up),
            // AV1, whose size is in the sequence header at the start of the item's data (libheif's av1C boxes
            // carry none): 96x64 with a 48x32 thumbnail, an av01 item with its own ispe; and alone.
            ("thumbnail.avif", 96, 64, PixelSize(width: 96, height: 64), .up),
            ("photo.avif", 96, 64, PixelSize(width: 96, height: 64), .up),
        ] as [(String, UInt8, UInt8, PixelSize, ImageOrientation)])
    func theHeaderTakesTheCodedPicture(
        name: String, width: UInt8, height: UInt8, size: PixelSize, orientation: ImageOrientation
    ) throws {
        let data = try Self.withoutExtent(name, width: width, height: height)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == size)
        #expect(header.orientation == orientation)
        if orientation.swapsWidthAndHeight, HEIFLibrary.refusesAQuarterTurnWithoutExtent {
            #expect(throws: HEIFLibrary.quarterTurnWithoutExtent(header.format)) {
                try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            }
            return
        }
        let bitmap = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == header.storedSize)
        // The same picture as the file with its ispe; cropped-offset.heic's (coded 90x64, declared 90x60) as
        // libheif 1.15 showed it where libheif 1.22 and later refuse it.
        let original = try Fixtures.data("heif", name)
        let expected =
            if name == "cropped-offset.heic", HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
                try ImageDecoders.PNG().decode(
                    try Fixtures.data("heif", "cropped-offset.libheif.png"), context: decodingContext(.png))
            } else {
                try ImageDecoders.HEIF().decode(
                    original, context: ImageDecodingContext(header: try ImageHeader.parse(original)))
            }
        #expect(bitmap == expected)
    }

    /// The sequence header lies in `mdat`, after `meta`: a prefix that ends before it is `.truncated`, not the
    /// thumbnail's size. Before: the whole file read as 48x32 (the thumbnail's ispe), and so did every prefix
    /// that held `meta`.
    @Test func everyPrefixOfAnAVIFWithoutItsExtentIsTruncatedOrTheCodedSize() throws {
        let data = try Self.withoutExtent("thumbnail.avif", width: 96, height: 64)
        for length in 0...data.count {
            do {
                let header = try ImageHeader.parse(data.prefix(length))
                #expect(header.storedSize == PixelSize(width: 96, height: 64), "prefix of \(length) bytes")
            } catch {
                #expect(error.reason == .truncated, "prefix of \(length) bytes: \(error)")
            }
        }
    }

    @Test func theConformanceWindowIsLeftOut() throws {
        // cropped.heic: 90x64 coded in a parameter set of 96x64 whose conformance window takes 6 columns
        // off; without its clap (renamed free in place) and its ispe, libheif decodes 90x64.
        var bytes = [UInt8](try Self.withoutExtent("cropped.heic", width: 90, height: 60))
        let clap = try #require(
            (0...(bytes.count - 8)).first { bytes[$0..<($0 + 8)].elementsEqual([0, 0, 0, 40] + Array("clap".utf8)) })
        bytes.replaceSubrange((clap + 4)..<(clap + 8), with: Array("free".utf8))
        let data = Data(bytes)
        let hvcC = try #require(
            (0...(bytes.count - 4)).first { bytes[$0..<($0 + 4)].elementsEqual(Array("hvcC".utf8)) })
        let boxSize = Int(bytes[hvcC - 2]) << 8 | Int(bytes[hvcC - 1])  // under 64 KiB
        let record = Array(bytes[(hvcC + 4)..<(hvcC - 4 + boxSize)])
        #expect(HEIFCodedSize.hevcSizes(record) == [PixelSize(width: 96, height: 64)])
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 90, height: 64))
        let bitmap = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == header.storedSize)
    }
}
#endif
