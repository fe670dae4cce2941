import Testing

@testable import AsyncImageCache

@Suite struct RoundedCornersTests {
    static func opaque(width: Int, height: Int, alpha: UInt8 = 255) -> Bitmap {
        Bitmap(width: width, height: height, pixels: Array([UInt8]([200, 40, 90, alpha]).repeated(width * height)))
    }

    @Test func cornersBecomeTransparentAndTheRestStaysOpaque() {
        let rounded = Self.opaque(width: 40, height: 20).roundingCorners(radius: 8)
        for (x, y) in [(0, 0), (39, 0), (0, 19), (39, 19), (1, 1), (38, 18)] {
            #expect(rounded.pixel(x: x, y: y).alpha == 0, "(\(x), \(y))")
        }
        for (x, y) in [(20, 10), (20, 0), (20, 19), (0, 10), (39, 10), (8, 0), (0, 8)] {
            #expect(rounded.pixel(x: x, y: y).alpha == 255, "(\(x), \(y))")
        }
    }

    @Test(arguments: 3...10)
    func cornerPixelIsTransparentForEveryRadiusFromThree(radius: Int) {
        #expect(Self.opaque(width: 40, height: 20).roundingCorners(radius: radius).pixel(x: 0, y: 0).alpha == 0)
    }

    @Test func atRadiusTwoTheCornerPixelKeepsOnlyItsCoveredFraction() {
        // The circle of radius 2 around (2, 2) still covers 31.5% of pixel (0, 0) (integrated
        // numerically outside the project), so that pixel is faint rather than fully transparent;
        // 4x4 sampling resolves coverage to 1/16.
        let alpha = Double(Self.opaque(width: 40, height: 20).roundingCorners(radius: 2).pixel(x: 0, y: 0).alpha)
        #expect(abs(alpha / 255 - 0.315) <= 0.07)
    }

    @Test func pixelOnTheArcIsPartlyTransparent() {
        // The arc of radius 8 around (8, 8) crosses pixel (2, 2) at 45 degrees: (2.34, 2.34).
        let alpha = Self.opaque(width: 40, height: 20).roundingCorners(radius: 8).pixel(x: 2, y: 2).alpha
        #expect(alpha > 0 && alpha < 255)
    }

    @Test func coveredAreaMatchesTheRoundedRectangle() {
        // A rounded rectangle loses (4 - pi) r^2 to its corners; anti-aliasing keeps the total right.
        let rounded = Self.opaque(width: 40, height: 20).roundingCorners(radius: 10)
        let area = stride(from: 3, to: rounded.pixels.count, by: 4).reduce(0.0) {
            $0 + Double(rounded.pixels[$1]) / 255
        }
        #expect(abs(area - (800 - (4 - Double.pi) * 100)) < 1)
    }

    @Test func radiusIsClampedToHalfTheShorterSide() {
        let bitmap = Self.opaque(width: 40, height: 20)
        #expect(bitmap.roundingCorners(radius: 1000) == bitmap.roundingCorners(radius: 10))
        #expect(bitmap.roundingCorners(radius: 1000) != bitmap.roundingCorners(radius: 9))
    }

    @Test(arguments: [3, 5, 21, 45])
    func aHugeRadiusOnAnOddSquareGivesACircle(side: Int) {
        // Half of an odd side ends in half a pixel: the circle's centre is the middle pixel's centre, and
        // its diameter the whole side, with no straight piece of edge between the arcs.
        let rounded = Self.opaque(width: side, height: side).roundingCorners(radius: 10_000)
        let area = stride(from: 3, to: rounded.pixels.count, by: 4).reduce(0.0) {
            $0 + Double(rounded.pixels[$1]) / 255
        }
        let circle = Double.pi * Double(side * side) / 4
        #expect(abs(area - circle) < 0.25, "area \(area), a circle \(circle)")
    }

    @Test func zeroOrNegativeRadiusChangesNothing() {
        let bitmap = Self.opaque(width: 7, height: 5)
        #expect(bitmap.roundingCorners(radius: 0) == bitmap)
        #expect(bitmap.roundingCorners(radius: -3) == bitmap)
    }

    @Test func existingAlphaIsScaledAndColoursAreKept() {
        let rounded = Self.opaque(width: 30, height: 30, alpha: 128).roundingCorners(radius: 6)
        #expect(rounded.pixel(x: 15, y: 15) == (200, 40, 90, 128))
        #expect(rounded.pixel(x: 0, y: 0) == (200, 40, 90, 0))
        #expect(rounded.pixel(x: 1, y: 2).alpha < 128)
    }

    @Test func allFourCornersMirrorEachOther() {
        let rounded = Self.opaque(width: 31, height: 17).roundingCorners(radius: 7)
        for y in 0..<7 {
            for x in 0..<7 {
                let alpha = rounded.pixel(x: x, y: y).alpha
                #expect(rounded.pixel(x: 30 - x, y: y).alpha == alpha)
                #expect(rounded.pixel(x: x, y: 16 - y).alpha == alpha)
                #expect(rounded.pixel(x: 30 - x, y: 16 - y).alpha == alpha)
            }
        }
    }
}

extension Array {
    /// The array's elements repeated `count` times, one copy after the other.
    func repeated(_ count: Int) -> [Element] { (0..<count).flatMap { _ in self } }
}
