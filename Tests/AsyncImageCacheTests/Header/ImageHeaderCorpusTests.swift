import Foundation
import Testing

@testable import AsyncImageCache

/// Sizes of the GIF and WebP fixtures as Pillow 13.0.0 reports them (`Image.open(path).size`, run by
/// hand outside the project), with the first WebP chunk read by Python for the kind column.
@Suite struct ImageHeaderCorpusTests {
    static let gifSizes: [(name: String, width: Int, height: Int)] = [
        ("alpha_gif_a.gif", 256, 256), ("anim-gr.gif", 100, 50), ("any-disposal.gif", 32, 32),
        ("beacon.gif", 6, 6), ("interlaced-32x32.gif", 32, 32), ("interlaced.gif", 540, 330),
        ("large-gif-anim-combine.gif", 1000, 1000), ("mixed-disposal.gif", 32, 32),
        ("triangle-001.gif", 256, 128), ("video-001.5bpp.gif", 150, 103), ("video-001.gif", 150, 103),
        ("video-001.interlaced.gif", 150, 103), ("video-005.gray.gif", 150, 103),
    ]

    static let webpSizes: [(name: String, kind: String, width: Int, height: Int)] = [
        ("anim.webp", "VP8X", 200, 200), ("blue-purple-pink.lossless.webp", "VP8L", 150, 100),
        ("lossless_indexed_1bit_palette.webp", "VP8L", 230, 128), ("lossy_alpha.webp", "VP8X", 100, 100),
        ("random_lossless.webp", "VP8X", 64, 63), ("random_lossy.webp", "VP8X", 99, 87),
        ("simple-gray.webp", "VP8 ", 100, 100), ("test.webp", "VP8 ", 128, 128),
        ("video-001.lossy.webp", "VP8 ", 150, 103), ("yellow_rose.lossless.webp", "VP8L", 400, 301),
        ("yellow_rose.lossy-with-alpha.webp", "VP8X", 400, 301), ("yellow_rose.lossy.webp", "VP8 ", 400, 301),
    ]

    @Test func tablesListEveryFixture() throws {
        #expect(try Fixtures.files(in: "gif", withExtensions: ["gif"]) == Self.gifSizes.map(\.name))
        #expect(try Fixtures.files(in: "webp", withExtensions: ["webp"]) == Self.webpSizes.map(\.name))
    }

    @Test(arguments: gifSizes.map(\.name))
    func gifFixtureReportsItsLogicalScreenSize(name: String) throws {
        let expected = try #require(Self.gifSizes.first { $0.name == name })
        let header = try ImageHeader.parse(Fixtures.data("gif", name))
        #expect(
            header == ImageHeader(format: .gif, storedSize: PixelSize(width: expected.width, height: expected.height)))
    }

    @Test(arguments: webpSizes.map(\.name))
    func webpFixtureReportsItsCanvasSize(name: String) throws {
        let expected = try #require(Self.webpSizes.first { $0.name == name })
        let data = try Fixtures.data("webp", name)
        #expect(String(decoding: data[12..<16], as: UTF8.self) == expected.kind)
        let header = try ImageHeader.parse(data)
        #expect(
            header == ImageHeader(format: .webp, storedSize: PixelSize(width: expected.width, height: expected.height)))
    }

    @Test func corpusCoversEveryWebPKind() {
        #expect(Set(Self.webpSizes.map(\.kind)) == ["VP8 ", "VP8L", "VP8X"])
    }
}
