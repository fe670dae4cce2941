import Foundation
import Testing

@testable import AsyncImageCache

/// Schemes are case-insensitive (RFC 3986): `HTTP://` loads, and shares its entries with `http://`.
@Suite struct URLSchemeCaseTests {
    @Test func anUpperCaseSchemeLoadsAndSharesTheLowerCaseEntries() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 320, height: 240)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let lower = server.url("/images/0.jpg")
        let upper = try #require(URL(string: "HTTP" + lower.absoluteString.dropFirst("http".count)))

        let image = try await store.image(for: ImageRequest(url: upper, targetWidth: 100))
        store.waitForDiskMaintenance()
        #expect(image.pixelSize == PixelSize(width: 100, height: 75))
        #expect(store.cachedImage(for: ImageRequest(url: lower, targetWidth: 100)) != nil)
        #expect(store.cachedPixelSize(for: lower) == CGSize(width: 320, height: 240))
        #expect(store.diskFileNames == [SHA256.hexDigest(of: lower.absoluteString)])
        _ = try await store.image(for: ImageRequest(url: lower, targetWidth: 200))
        #expect(try await server.hits(for: "/images/0.jpg") == 1)
    }

    /// A redirect to another host whose Location has an upper-case scheme is followed as a new task; it
    /// failed with "unsupported URL" (URLSession refuses `HTTP://`), where one to the same host loaded.
    @Test(arguments: ["127.0.0.1", "localhost"])
    func aRedirectToAnUpperCaseSchemeLoads(host: String) async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 320, height: 240)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let target = "HTTP://\(host):\(server.port)/images/0.jpg"
        let url = server.url(
            "/redirect-to/302?" + target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        let loader = HTTPDataLoader()
        #expect(try await loader.loadData(for: url) == Data(contentsOf: folder.url.appendingPathComponent("0.jpg")))
    }

    /// The error of a load names the URL that was asked, as it was written: before, every error the
    /// download itself met (a status, a cut body, a cap, a timeout) named it with its scheme folded, so it
    /// never equalled the URL of an `HTTP://` request, where a `304` answered to no validators named it as
    /// asked.
    @Test func anUpperCaseSchemesErrorsNameTheURLAsked() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 320, height: 240)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        func upper(_ path: String) throws -> URL {
            try #require(URL(string: "HTTP" + server.url(path).absoluteString.dropFirst("http".count)))
        }
        let missing = try upper("/status/404")
        await #expect(throws: ImageLoadingError.httpStatus(code: 404, url: missing)) {
            try await HTTPDataLoader().loadData(for: missing)
        }
        let large = try upper("/images/0.jpg")
        await #expect(throws: ImageLoadingError.responseTooLarge(url: large, byteLimit: 100)) {
            try await HTTPDataLoader(maximumResponseBytes: 100).loadData(for: large)
        }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        await #expect(throws: ImageLoadingError.httpStatus(code: 404, url: missing)) {
            try await store.image(for: ImageRequest(url: missing, targetWidth: 100))
        }
    }

    @Test func onlyTheSchemeIsFolded() throws {
        let url = try #require(URL(string: "Data:image/png;base64,QUJD"))
        #expect(url.cacheKey == "data:image/png;base64,QUJD")
        let path = try #require(URL(string: "HTTPS://Example.com/A.JPG?Q=1"))
        #expect(path.cacheKey == "https://Example.com/A.JPG?Q=1")
        let relative = try #require(URL(string: "Photos/A:B.jpg"))
        #expect(relative.cacheKey == relative.absoluteString)
    }
}

/// Which URLs are fetched over the network, and so kept in the disk tier: `http` and `https` in any
/// case, and nothing that merely starts like them.
@Suite struct URLIsRemoteTests {
    @Test(arguments: [
        ("http://h/a.jpg", true), ("https://h/a.jpg", true), ("HTTP://h/a.jpg", true), ("HtTpS://h/a.jpg", true),
        ("file:///tmp/a.jpg", false), ("data:image/png;base64,AA==", false), ("ftp://h/a.jpg", false),
        ("httpx://h/a.jpg", false), ("https2://h/a.jpg", false), ("htt://h/a.jpg", false), ("h:a", false),
    ])
    func theSchemeDecides(text: String, isRemote: Bool) throws {
        let url = try #require(URL(string: text))
        #expect(url.isRemote == isRemote)
        #expect(url.isRemote == ["http", "https"].contains(url.scheme?.lowercased()))
    }

    @Test func aRelativeURLTakesItsBasesScheme() throws {
        let base = try #require(URL(string: "HTTPS://h/dir/"))
        #expect(try #require(URL(string: "a.jpg", relativeTo: base)).isRemote)
        #expect(try !#require(URL(string: "a.jpg", relativeTo: URL(fileURLWithPath: "/tmp/"))).isRemote)
    }
}
