import Foundation
import Testing

@testable import AsyncImageCache

/// In a URL an escaped character is data, never a delimiter (RFC 3986 2.2): `%3B` inside a
/// `data:` URL's header is a ";" inside a parameter value, not the `;base64` marker.
@Suite struct DataURLEscapedSeparatorTests {
    @Test func anEscapedSemicolonDoesNotMakeABase64Marker() throws {
        let parsed = try DataURL(string: "data:text/plain;name=a%3Bbase64,SGk=")
        #expect(!parsed.isBase64)
        #expect(parsed.data == Data("SGk=".utf8))
        #expect(parsed.mediaType == "text/plain;name=a;base64")
    }
}
