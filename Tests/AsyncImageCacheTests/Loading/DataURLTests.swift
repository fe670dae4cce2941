import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct DataURLTests {
    /// Eight bytes that cover the awkward base64 characters ("+", "/") and a zero byte.
    let bytes = Data([0x89, 0x50, 0x4E, 0x47, 0x00, 0xFB, 0xFF, 0xFE])

    @Test func base64PayloadDecodesWithItsMediaType() throws {
        let parsed = try DataURL(string: "data:image/png;base64,\(bytes.base64EncodedString())")
        #expect(parsed.data == bytes)
        #expect(parsed.mediaType == "image/png")
        #expect(parsed.isBase64)
    }

    @Test func base64PayloadWithoutMediaTypeDefaultsToPlainText() throws {
        let parsed = try DataURL(string: "data:;base64,\(bytes.base64EncodedString())")
        #expect(parsed.data == bytes)
        #expect(parsed.mediaType == "text/plain;charset=US-ASCII")
    }

    @Test func base64PayloadMayBePercentEscapedUnpaddedAndWrapped() throws {
        let encoded = bytes.base64EncodedString()  // "iVBORwD7//4="
        let escaped = encoded.replacingOccurrences(of: "/", with: "%2F").replacingOccurrences(of: "=", with: "")
        let wrapped = String(escaped.prefix(4)) + "%0A" + String(escaped.dropFirst(4))
        #expect(try DataURL(string: "data:image/png;base64,\(wrapped)").data == bytes)
    }

    @Test func percentEncodedPayloadDecodesToItsBytes() throws {
        let parsed = try DataURL(string: "data:text/plain;charset=utf-8,a%20b%E2%9C%93c,d")
        #expect(parsed.data == Data("a b\u{2713}c,d".utf8))
        #expect(parsed.mediaType == "text/plain;charset=utf-8")
        #expect(!parsed.isBase64)
    }

    @Test func percentEncodedPayloadWithoutMediaTypeDecodes() throws {
        let parsed = try DataURL(string: "data:,hello%21")
        #expect(parsed.data == Data("hello!".utf8))
        #expect(parsed.mediaType == "text/plain;charset=US-ASCII")
    }

    @Test func charsetWithoutMediaTypeImpliesPlainText() throws {
        #expect(try DataURL(string: "data:;charset=utf-8,x").mediaType == "text/plain;charset=utf-8")
    }

    @Test func emptyPayloadIsEmptyData() throws {
        #expect(try DataURL(string: "data:image/gif;base64,").data.isEmpty)
        #expect(try DataURL(string: "data:,").data.isEmpty)
    }

    @Test func schemeAndBase64MarkerAreCaseInsensitive() throws {
        #expect(try DataURL(string: "DATA:image/png;BASE64,\(bytes.base64EncodedString())").data == bytes)
    }

    @Test func aFoundationURLParsesFromItsAbsoluteString() throws {
        let url = try #require(URL(string: "data:image/png;base64,\(bytes.base64EncodedString())"))
        #expect(try DataURL(url: url).data == bytes)
    }

    @Test func aLargeDataURLDecodesInOnePass() throws {
        let large = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let url = try #require(URL(string: "data:image/jpeg;base64,\(large.base64EncodedString())"))
        #expect(try DataURL(url: url).data == large)
    }

    @Test(arguments: [
        ("http:image/png;base64,AAAA", "the scheme is not data:"),
        ("data:image/png;base64", "no comma separates the header from the payload"),
        ("data:image/png;base64,AA*A", "the payload is not valid base64"),
        ("data:image/png;base64,AAAAA", "the base64 payload has an impossible length (5 characters)"),
        // Foundation decodes these to bytes nobody encoded: [0], [0x41, 0], "ABC".
        ("data:image/png;base64,====", "the payload is not valid base64"),
        ("data:image/png;base64,QQ=A", "the payload is not valid base64"),
        ("data:image/png;base64,QUJD====", "the payload is not valid base64"),
        ("data:,50%", "a \"%\" in the payload is not followed by two hex digits"),
        ("data:,%zz", "a \"%\" in the payload is not followed by two hex digits"),
        ("data:image,abc", "the media type \"image\" is not type/subtype"),
        ("data:image/png;charset,abc", "the parameter \"charset\" is not attribute=value"),
        ("data", "the scheme is not data:"),
    ])
    func malformedURLsFailWithAReason(text: String, reason: String) {
        #expect(throws: ImageLoadingError.invalidDataURL(reason: reason)) { try DataURL(string: text) }
    }
}
