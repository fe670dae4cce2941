#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

@Suite("GIF decoder")
struct GIFDecoderTests {
    static let corpus = (try? Fixtures.files(in: "gif", withExtensions: ["gif"])) ?? []

    let decoder = ImageDecoders.GIF()

    func decode(_ name: String) throws -> Bitmap {
        try decoder.decode(try Fixtures.data("gif", name), context: decodingContext(.gif))
    }

    @Test func theCorpusHoldsEveryFileItsReadmeLists() {
        #expect(Self.corpus.count == 13)
    }

    @Test(arguments: corpus)
    func everyFileDecodesAtTheLogicalScreenSizeOfItsHeader(name: String) throws {
        let data = try Fixtures.data("gif", name)
        #expect(
            try decoder.decode(data, context: decodingContext(.gif)).pixelSize == ImageHeader.parse(data).storedSize
        )
    }

    @Test(arguments: ["video-001", "video-001.5bpp", "video-005.gray"])
    func anInterlacedFileEqualsItsSequentialTwin(name: String) throws {
        // Only video-001 has an interlaced twin in the corpus; the others are interlaced here (same pixels).
        let sequential = try decode("\(name).gif")
        let interlaced =
            try name == "video-001"
            ? decode("video-001.interlaced.gif")
            : decoder.decode(
                Self.reinterlaced(sequential), context: decodingContext(.gif))
        #expect(interlaced == sequential)
    }

    @Test func theInterlacedRowOrderFollowsTheFourPasses() {
        // GIF89a appendix E, worked by hand for 10 rows: pass 1 every 8th row from 0, pass 2 every 8th from 4,
        // pass 3 every 4th from 2, pass 4 every 2nd from 1.
        #expect(GIFFrame.interlacedRowOrder(height: 10) == [0, 8, 4, 2, 6, 1, 3, 5, 7, 9])
        #expect(GIFFrame.interlacedRowOrder(height: 1) == [0])
        for height in 1...40 {
            #expect(GIFFrame.interlacedRowOrder(height: height).sorted() == Array(0..<height))
        }
    }

    @Test func theTransparentIndexOfTheControlExtensionIsTransparent() throws {
        let bitmap = try decode("alpha_gif_a.gif")
        #expect(bitmap.alphaValues.contains(0))
        #expect(bitmap.alphaValues.contains(255))
        #expect(bitmap.alphaValues.allSatisfy { $0 == 0 || $0 == 255 })
        #expect(try decode("video-001.gif").alphaValues.allSatisfy { $0 == 255 })
    }

    @Test func aFirstFrameSmallerThanTheScreenLeavesTheRestTransparent() throws {
        // Fixtures/gif/README.txt: frame 1 of large-gif-anim-combine.gif is 630x870 at (370, 130), opaque.
        let bitmap = try decode("large-gif-anim-combine.gif")
        #expect(bitmap.pixelSize == PixelSize(width: 1000, height: 1000))
        for (x, y) in [(369, 500), (500, 129), (0, 0), (999, 0)] { #expect(bitmap.pixel(x: x, y: y).alpha == 0) }
        for (x, y) in [(370, 130), (999, 999), (370, 999), (700, 500)] {
            #expect(bitmap.pixel(x: x, y: y).alpha == 255)
        }
    }

    /// The pixels of `bitmap`, an opaque GIF decode, as an interlaced GIF with one local color table.
    static func reinterlaced(_ bitmap: Bitmap) -> Data {
        var colors: [SyntheticGIF.Color] = []
        var indices: [UInt8] = []
        for offset in stride(from: 0, to: bitmap.pixels.count, by: 4) {
            let color = (
                red: bitmap.pixels[offset], green: bitmap.pixels[offset + 1], blue: bitmap.pixels[offset + 2]
            )
            if let index = colors.firstIndex(where: { $0 == color }) {
                indices.append(UInt8(index))
            } else {
                indices.append(UInt8(colors.count))
                colors.append(color)
            }
        }
        let frame = SyntheticGIF.Frame(
            width: bitmap.width, height: bitmap.height, indices: indices, localColors: colors, interlaced: true)
        return SyntheticGIF.make(width: bitmap.width, height: bitmap.height, globalColors: nil, frames: [frame])
    }
}
#endif
