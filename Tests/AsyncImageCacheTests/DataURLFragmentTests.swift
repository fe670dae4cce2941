import Foundation
import Testing

@testable import AsyncImageCache

/// A `#` ends a URL's data (RFC 3986 3.5; the fetch standard's data: URL processor excludes the
/// fragment): it is not part of a `data:` URL's payload.
@Suite struct DataURLFragmentTests {
    private let bytes = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0xFF, 0x00])

    @Test func aFragmentIsNotPartOfTheBase64Payload() throws {
        let url = try #require(URL(string: "data:image/png;base64,\(bytes.base64EncodedString())#icon"))
        #expect(try DataURL(url: url).data == bytes)
    }

    @Test func aFragmentIsNotPartOfThePercentEncodedPayload() throws {
        let url = try #require(URL(string: "data:text/plain,hello#greeting"))
        #expect(try DataURL(url: url).data == Data("hello".utf8))
    }
}
