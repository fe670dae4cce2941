import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct ResizeTests {
    static func filled(width: Int, height: Int, _ color: [UInt8]) -> Bitmap {
        Bitmap(width: width, height: height, pixels: color.repeated(width * height))
    }

    /// A smooth but busy test card: colour waves, a sharp diagonal edge, and alpha from 96 to 255.
    static func testCard(width: Int, height: Int) -> Bitmap {
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                let u = Double(x) / Double(width)
                let v = Double(y) / Double(height)
                pixels += [
                    UInt8(127.5 + 127.5 * sin(u * 9 + v * 4)), UInt8(255 * u * v),
                    x + y < (width + height) / 2 ? 30 : 220, UInt8(96 + 159 * (0.5 + 0.5 * cos(v * 5))),
                ]
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    @Test(arguments: [
        PixelSize(width: 10, height: 7), PixelSize(width: 80, height: 50), PixelSize(width: 1, height: 1),
    ])
    func constantColourStaysThatColour(size: PixelSize) {
        for color: [UInt8] in [[200, 100, 50, 255], [10, 250, 128, 128], [255, 255, 255, 1]] {
            let resized = Self.filled(width: 37, height: 23, color).resized(to: size)
            #expect(resized.pixelSize == size)
            #expect(resized.pixels == color.repeated(size.width * size.height), "\(color)")
        }
    }

    @Test func sameSizeReturnsTheBitmapUnchanged() {
        let card = Self.testCard(width: 9, height: 4)
        #expect(card.resized(to: card.pixelSize) == card)
    }

    @Test(arguments: [
        PixelSize(width: 123, height: 45), PixelSize(width: 7, height: 300), PixelSize(width: 1, height: 64),
    ])
    func outputHasExactlyTheRequestedSize(size: PixelSize) {
        let resized = Self.testCard(width: 64, height: 48).resized(to: size)
        #expect(resized.width == size.width && resized.height == size.height)
        #expect(resized.pixels.count == size.width * size.height * 4)
    }

    @Test func shrinkingAGradientKeepsItMonotonic() {
        var pixels: [UInt8] = []
        for _ in 0..<16 { for x in 0..<256 { pixels += [UInt8(x), UInt8(255 - x), 0, 255] } }
        let resized = Bitmap(width: 256, height: 16, pixels: pixels).resized(to: PixelSize(width: 37, height: 5))
        for y in 0..<resized.height {
            let reds = (0..<resized.width).map { resized.pixel(x: $0, y: y).red }
            let greens = (0..<resized.width).map { resized.pixel(x: $0, y: y).green }
            #expect(zip(reds, reds.dropFirst()).allSatisfy { $0 <= $1 }, "row \(y): \(reds)")
            #expect(zip(greens, greens.dropFirst()).allSatisfy { $0 >= $1 }, "row \(y): \(greens)")
            #expect(reds.first! < 10 && reds.last! > 245)
        }
    }

    @Test(arguments: [
        PixelSize(width: 13, height: 13), PixelSize(width: 20, height: 20), PixelSize(width: 31, height: 17),
    ])
    func whiteDiscOnTransparencyGetsNoDarkFringe(size: PixelSize) {
        // Transparent pixels are black (0, 0, 0, 0): averaging them without premultiplying would
        // pull the disc's edge towards grey.
        var pixels: [UInt8] = []
        for y in 0..<64 {
            for x in 0..<64 {
                let inside = pow(Double(x) - 31.5, 2) + pow(Double(y) - 31.5, 2) <= 24 * 24
                pixels += inside ? [255, 255, 255, 255] : [0, 0, 0, 0]
            }
        }
        let resized = Bitmap(width: 64, height: 64, pixels: pixels).resized(to: size)
        var edgePixels = 0
        for y in 0..<size.height {
            for x in 0..<size.width {
                let pixel = resized.pixel(x: x, y: y)
                guard pixel.alpha > 0 else { continue }
                if pixel.alpha < 255 { edgePixels += 1 }
                #expect(min(pixel.red, pixel.green, pixel.blue) >= 250, "(\(x), \(y)): \(pixel)")
            }
        }
        #expect(edgePixels > 0)  // the edge really is soft, so the check above saw partial alpha
    }

    @Test(arguments: [
        PixelSize(width: 31, height: 20), PixelSize(width: 17, height: 41), PixelSize(width: 150, height: 90),
    ])
    func resultMatchesADoublePrecisionReference(size: PixelSize) {
        let card = Self.testCard(width: 97, height: 61)
        let psnr = ReferenceLanczos.psnr(card.resized(to: size), ReferenceLanczos.resize(card, to: size))
        #expect(psnr >= 40, "PSNR \(psnr) dB")
    }

    @Test func tinySourcesCanBeEnlargedAndShrunk() {
        let dot = Self.filled(width: 1, height: 1, [9, 8, 7, 255])
        #expect(dot.resized(to: PixelSize(width: 5, height: 3)) == Self.filled(width: 5, height: 3, [9, 8, 7, 255]))
        let card = Self.testCard(width: 2, height: 3)
        #expect(card.resized(to: PixelSize(width: 1, height: 1)).pixelSize == PixelSize(width: 1, height: 1))
        #expect(card.resized(to: PixelSize(width: 200, height: 1)).pixelSize == PixelSize(width: 200, height: 1))
    }
}
