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
        // 0x1A | 0x20 is a colon: letters alone are compared in either case.
        ("data\u{1A},hello", "the scheme is not data:"),
    ])
    func malformedURLsFailWithAReason(text: String, reason: String) {
        #expect(throws: ImageLoadingError.invalidDataURL(reason: reason)) { try DataURL(string: text) }
    }

    /// What the size of a `data:` URL reads: the start of its payload, decoded alone, the same bytes as
    /// the whole decode's start, for base64 with line breaks and escapes and for percent-encoded bytes.
    @Test func aPayloadsPrefixIsTheStartOfItsDecode() throws {
        let image = try SampleImages.jpeg(width: 300, height: 200)
        let base64 = image.base64EncodedString(options: .lineLength76Characters)
            .replacingOccurrences(of: "+", with: "%2B")
        let percent = image.map { String(format: "%%%02X", $0) }.joined()
        // Base64 with every character escaped, line breaks too: 4.1 characters a byte.
        let escapedBase64 = image.base64EncodedString(options: .lineLength76Characters).utf8
            .map { String(format: "%%%02X", $0) }.joined()
        for url in [
            "data:image/jpeg;base64," + base64, "data:image/jpeg," + percent, "DATA:;BASE64," + base64,
            "data:image/jpeg;base64," + base64 + "#fragment", "data:image/jpeg;base64," + escapedBase64,
        ] {
            let whole = try DataURL(string: url).data
            #expect(whole == image)
            for length in [1, 2, 3, 4, 5, 100, 16_384, image.count - 1, image.count, image.count + 5] {
                #expect(DataURL.payloadPrefix(of: url, maxLength: length) == whole.prefix(length), "\(length)")
            }
        }
        // A fragment ends the payload, however far the string goes on: all of "ABCD", unpadded.
        let fragment = "data:;base64,QUJDRA#" + String(repeating: "x", count: 100)
        #expect(DataURL.payloadPrefix(of: fragment, maxLength: 4) == Data("ABCD".utf8))
        #expect(DataURL.payloadPrefix(of: "data:image/jpeg;base64", maxLength: 16) == nil)  // no comma
        #expect(DataURL.payloadPrefix(of: "data:image,x;base64,\(base64)", maxLength: 16) == nil)  // not type/subtype
    }

    /// `cachedPixelSize(for:)` of a `data:` URL decodes only what the header takes: before, it decoded the
    /// whole payload at every call (a 64 MiB URL grew the process by 135 MiB for a size), and a payload
    /// damaged far past its header (which a load refuses) shows that it no longer does.
    @Test func theSizeOfADataURLReadsOnlyTheStartOfItsPayload() throws {
        let image = try SampleImages.jpeg(width: 2400, height: 1600)
        try #require(image.count > 100_000, "the damage is far past what the header takes")
        let url = try #require(URL(string: "data:image/jpeg;base64," + image.base64EncodedString() + "!!!!"))
        #expect(throws: ImageLoadingError.self) { try DataURL(url: url) }
        let folder = TemporaryDirectory("data-url-size")
        let store = try ImageStore.makeForTesting(root: folder.url)
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 2400, height: 1600))
    }

    /// A header that needs more than the first read, in a base64 payload with every character escaped: the
    /// reads grow until it is whole. Each read gave three quarters of the bytes asked for, which ended them,
    /// and the size was `nil`.
    @Test func theSizeOfADataURLWithALongHeaderInAnEscapedPayload() throws {
        let image = try SampleImages.jpeg(width: 300, height: 200)
        // A 40 KB comment segment after the start-of-image marker.
        let comment = [0xFF, 0xFE, UInt8(40_002 >> 8), UInt8(40_002 & 0xFF)] + [UInt8](repeating: 0x61, count: 40_000)
        let jpeg = image.prefix(2) + Data(comment) + image.dropFirst(2)
        let escaped = jpeg.base64EncodedString().utf8.map { String(format: "%%%02X", $0) }.joined()
        let url = try #require(URL(string: "data:image/jpeg;base64," + escaped))
        #expect(try DataURL(url: url).data == jpeg)
        let folder = TemporaryDirectory("data-url-long-header")
        let store = try ImageStore.makeForTesting(root: folder.url)
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 300, height: 200))
    }
}
