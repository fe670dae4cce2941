import Testing

@testable import AsyncImageCache

@Suite struct BitmapDescriptionTests {
    /// A bitmap prints as its size: a 1000x1000 one printed its 4,000,000 pixel bytes, about 15 MB of text.
    @Test func aBitmapPrintsAsItsSizeNotItsPixels() {
        let bitmap = Bitmap(width: 1000, height: 1000, pixels: [UInt8](repeating: 7, count: 4_000_000))
        #expect(String(describing: bitmap) == "Bitmap(1000x1000)")
        #expect(String(reflecting: bitmap) == "Bitmap(1000x1000)")
        #expect("\(bitmap)".count < 100)
    }
}
