import Foundation
import Testing

@testable import AsyncImageCache

/// The default loader picks the source by scheme; each source has its own suite for the details.
@Suite struct DataLoaderTests {
    let directory = TemporaryDirectory("data-loader")
    let bytes = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46])

    @Test func dataURLsAreDecodedInPlace() async throws {
        let url = try #require(URL(string: "data:image/jpeg;base64,\(bytes.base64EncodedString())"))
        #expect(try await DataLoader().loadData(for: url) == bytes)
    }

    @Test func malformedDataURLsFailAsInvalid() async throws {
        let url = try #require(URL(string: "data:image/jpeg;base64"))
        let reason = "no comma separates the header from the payload"
        await #expect(throws: ImageLoadingError.invalidDataURL(reason: reason)) {
            try await DataLoader().loadData(for: url)
        }
    }

    @Test func fileURLsAreReadInPlace() async throws {
        let url = directory.url.appendingPathComponent("a.jpg")
        try bytes.write(to: url)
        #expect(try await DataLoader().loadData(for: url) == bytes)
    }

    @Test func httpURLsAreDownloadedWithTheGivenSettings() async throws {
        try bytes.write(to: directory.url.appendingPathComponent("a.jpg"))
        let server = try await TestHTTPServer(serving: directory.url)
        #expect(try await DataLoader().loadData(for: server.url("/images/a.jpg")) == bytes)

        let small = DataLoader(maximumResponseBytes: 4)
        #expect(small.http.maximumResponseBytes == 4)
        await #expect(throws: ImageLoadingError.responseTooLarge(url: server.url("/images/a.jpg"), byteLimit: 4)) {
            try await small.loadData(for: server.url("/images/a.jpg"))
        }
    }

    @Test func defaultsAreThirtySecondsAndSixtyFourMebibytes() {
        let loader = DataLoader()
        #expect(loader.http.timeout == 30)
        #expect(loader.http.maximumResponseBytes == 64 << 20)
    }

    @Test(arguments: ["ftp://example.com/a.jpg", "mailto:someone@example.com", "custom-scheme:a.jpg"])
    func otherSchemesAreUnsupported(text: String) async throws {
        let url = try #require(URL(string: text))
        await #expect(throws: ImageLoadingError.unsupportedURL(url)) { try await DataLoader().loadData(for: url) }
    }

    @Test func aURLWithoutSchemeIsUnsupported() async throws {
        let url = try #require(URL(string: "images/a.jpg"))
        await #expect(throws: ImageLoadingError.unsupportedURL(url)) { try await DataLoader().loadData(for: url) }
    }

    @Test func schemesAreMatchedCaseInsensitively() async throws {
        let url = try #require(URL(string: "DATA:,abc"))
        #expect(try await DataLoader().loadData(for: url) == Data("abc".utf8))
    }
}
