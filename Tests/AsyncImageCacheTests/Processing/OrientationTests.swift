import Testing

@testable import AsyncImageCache

@Suite struct OrientationTests {
    /// A 3x2 bitmap whose red channel numbers the pixels:
    /// ```
    /// 0 1 2
    /// 3 4 5
    /// ```
    static let numbered = Bitmap(width: 3, height: 2, pixels: (0..<6).flatMap { [UInt8($0), 10, 20, 255] })

    /// The red channels of `bitmap`, row by row.
    static func grid(_ bitmap: Bitmap) -> [[Int]] {
        (0..<bitmap.height).map { y in (0..<bitmap.width).map { x in Int(bitmap.pixel(x: x, y: y).red) } }
    }

    /// Worked out by hand from the EXIF definitions: what a viewer shows for each stored orientation.
    static let expected: [(ImageOrientation, [[Int]])] = [
        (.up, [[0, 1, 2], [3, 4, 5]]),
        (.upMirrored, [[2, 1, 0], [5, 4, 3]]),  // left and right exchanged
        (.down, [[5, 4, 3], [2, 1, 0]]),  // half a turn
        (.downMirrored, [[3, 4, 5], [0, 1, 2]]),  // top and bottom exchanged
        (.leftMirrored, [[0, 3], [1, 4], [2, 5]]),  // transpose: rows become columns
        (.right, [[3, 0], [4, 1], [5, 2]]),  // a quarter turn clockwise: the left column, read upwards, on top
        (.rightMirrored, [[5, 2], [4, 1], [3, 0]]),  // transverse
        (.left, [[2, 5], [1, 4], [0, 3]]),  // a quarter turn anticlockwise: the right column on top
    ]

    @Test(arguments: expected.map(\.0))
    func orientationTurnsTheBitmapUpright(orientation: ImageOrientation) throws {
        let grid = try #require(Self.expected.first { $0.0 == orientation }).1
        let oriented = Self.numbered.oriented(orientation)
        #expect(Self.grid(oriented) == grid)
        #expect(oriented.pixelSize == orientation.displaySize(ofStored: Self.numbered.pixelSize))
        // Only the positions change, never the colours.
        #expect(oriented.pixel(x: 0, y: 0).green == 10 && oriented.pixel(x: 0, y: 0).alpha == 255)
    }

    @Test(arguments: ImageOrientation.allCases)
    func applyingTheInverseRestoresTheBitmap(orientation: ImageOrientation) {
        var random = SeededGenerator(seed: UInt64(orientation.rawValue))
        let bitmap = Bitmap(
            width: 5, height: 3, pixels: (0..<60).map { _ in UInt8.random(in: 0...255, using: &random) })
        let inverse: ImageOrientation = orientation == .right ? .left : orientation == .left ? .right : orientation
        #expect(bitmap.oriented(orientation).oriented(inverse) == bitmap)
    }

    @Test func heifTurnThenMirrorMatchesTheExifOrientationTheHeaderReports() {
        // irot turns anticlockwise (.left per quarter turn), then imir exchanges top and bottom
        // (axis 0, .downMirrored) or left and right (axis 1, .upMirrored): ImageHeader maps those
        // pairs to one EXIF orientation, which must do the same to the pixels.
        let bitmap = Self.numbered
        let turned = [bitmap, bitmap.oriented(.left), bitmap.oriented(.down), bitmap.oriented(.right)]
        #expect(turned[1].oriented(.downMirrored) == bitmap.oriented(.leftMirrored))
        #expect(turned[1].oriented(.upMirrored) == bitmap.oriented(.rightMirrored))
        #expect(turned[3].oriented(.downMirrored) == bitmap.oriented(.rightMirrored))
        #expect(turned[3].oriented(.upMirrored) == bitmap.oriented(.leftMirrored))
        #expect(turned[2].oriented(.downMirrored) == bitmap.oriented(.upMirrored))
    }

    @Test func singleRowAndColumnBitmapsTurnToo() {
        let row = Bitmap(width: 4, height: 1, pixels: (0..<4).flatMap { [UInt8($0), 0, 0, 255] })
        #expect(Self.grid(row.oriented(.right)) == [[0], [1], [2], [3]])
        #expect(Self.grid(row.oriented(.left)) == [[3], [2], [1], [0]])
    }
}
