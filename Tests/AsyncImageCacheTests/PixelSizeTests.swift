import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct ImageRequestTests {
    @Test func targetWidthAndRadiusAreQuantizedToWholePixels() {
        let url = URL(string: "https://example.com/a.jpg")!
        #expect(ImageRequest(url: url, targetWidth: 320.4) == ImageRequest(url: url, targetWidth: 320))
        #expect(ImageRequest(url: url, targetWidth: 320.6).targetPixelWidth == 321)
        #expect(ImageRequest(url: url, cornerRadius: 7.5).cornerPixelRadius == 8)
        #expect(ImageRequest(url: url, targetWidth: 0.2).targetPixelWidth == nil)
        #expect(ImageRequest(url: url, targetWidth: .infinity).targetPixelWidth == nil)
        #expect(ImageRequest(url: url, cornerRadius: -4).cornerPixelRadius == 0)
    }
}
