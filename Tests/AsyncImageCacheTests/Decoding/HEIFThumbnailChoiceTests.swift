#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A thumbnail stands in for a HEIF's primary image only when it shows the same thing once the store has
/// applied the primary's orientation: the same transparency, the same way up (`Fixtures/heif-thumbnails`).
@Suite("HEIF thumbnail choice")
struct HEIFThumbnailChoiceTests {
    static func data(_ name: String) throws -> Data { try Fixtures.data("heif-thumbnails", name) }

    @Test func aPrimaryImageWithAlphaIsNotReplacedByAnOpaqueThumbnail() throws {
        let data = try Self.data("alpha-opaque-thumbnail.heic")  // 96x64 with alpha, a 48x32 opaque thumbnail
        let header = try ImageHeader.parse(data)
        let small = try ImageDecoders.HEIF().decode(
            data, context: ImageDecodingContext(header: header, minimumSize: PixelSize(width: 40, height: 27)))
        // The alpha rises from 0 at the left edge to 255 at the right one; the opaque thumbnail had 255 all over.
        let row = small.pixelSize.height / 2
        let leftAlpha = small.pixels[row * small.pixelSize.width * 4 + 3]
        #expect(leftAlpha < 16, "alpha \(leftAlpha) at the left edge of a \(small.pixelSize) decode")
    }

    @Test func aThumbnailCodedAnotherWayUpThanItsPrimaryImageIsPassedOver() async throws {
        // 64x64 coded as square-source.png with an irot for orientation 6; its 32x32 thumbnail is coded upright.
        let data = try Self.data("square-rotated-6-upright-thumbnail.heic")
        let header = try ImageHeader.parse(data)
        #expect(header.orientation == .right)
        let source = try ImageDecoders.PNG().decode(try Self.data("square-source.png"), context: decodingContext(.png))
        // The store turns whatever the decoder gives by the header's orientation, so the decode must be the
        // primary image as stored, also when a thumbnail covers the size asked for.
        let small = try ImageDecoders.HEIF().decode(
            data, context: ImageDecodingContext(header: header, minimumSize: PixelSize(width: 24, height: 24)))
        let expected = source.resized(to: small.pixelSize)
        let difference = small.meanColorDifference(from: expected)
        #expect(difference < 12, "mean difference \(difference) from the stored picture")
    }
}
#endif
