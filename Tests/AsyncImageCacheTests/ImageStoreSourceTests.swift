import Foundation
import Testing

@testable import AsyncImageCache

/// The three sources, and every way a remote source can fail.
@Suite struct ImageStoreSourceTests {
    @Test func dataURLsDecodeInBase64AndPercentEncoding() async throws {
        let root = TemporaryDirectory("root")
        let store = try ImageStore.makeForTesting(root: root.url)
        let png = try SampleImages.png(width: 12, height: 7)
        let base64 = URL(string: "data:image/png;base64," + png.base64EncodedString())!
        let percent = URL(string: "data:image/png," + png.map { String(format: "%%%02X", $0) }.joined())!
        #expect(try await store.image(for: ImageRequest(url: base64)).pixelSize == PixelSize(width: 12, height: 7))
        #expect(try await store.image(for: ImageRequest(url: percent)).pixelSize == PixelSize(width: 12, height: 7))
        #expect(store.diskFileNames.isEmpty)
    }

    @Test func fileURLsAreReadInPlaceAndNotCopiedToTheDiskTier() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let image = try await store.image(
            for: ImageRequest(url: folder.url.appendingPathComponent("0.jpg"), targetWidth: 50))
        #expect(image.pixelSize == PixelSize(width: 50, height: 25))
        #expect(store.diskFileNames.isEmpty)
    }

    @Test func aMissingFileIsATypedError() async throws {
        let root = TemporaryDirectory("root")
        let store = try ImageStore.makeForTesting(root: root.url)
        let error = await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: root.url.appendingPathComponent("missing.jpg")))
        }
        guard case .fileUnavailable = error else { Issue.record("got \(String(describing: error))"); return }
    }

    @Test func remoteImagesAreStoredInBothTiers() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 320, height: 240)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let url = server.url("/images/0.jpg")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100, cornerRadius: 8))
        store.waitForDiskMaintenance()
        let original = try #require(store.cachedOriginalBytes(for: url))
        #expect(original.data == (try Data(contentsOf: folder.url.appendingPathComponent("0.jpg"))))
        #expect(original.pixelSize == CGSize(width: 320, height: 240))
        #expect(store.diskFileNames == [SHA256.hexDigest(of: url.absoluteString)])
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 100.3, cornerRadius: 7.6)) != nil)
        #expect(store.variants.totalCost == 100 * 75 * 4)
        #expect(store.originals.totalCost == original.data.count)
    }

    /// Every failing route: a typed error, and nothing in either tier.
    @Test(arguments: ["404", "500", "slow", "truncated", "html", "oversized", "corrupt"])
    func aFailingSourceGivesATypedErrorAndWritesNothing(route: String) async throws {
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 400, height: 300)], into: folder.url)
        var corrupt = try Data(contentsOf: folder.url.appendingPathComponent(names[0]))
        corrupt.replaceSubrange(600..<corrupt.count - 2, with: Data(repeating: 0xFF, count: corrupt.count - 602))
        try corrupt.write(to: folder.url.appendingPathComponent("corrupt.jpg"))
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            // Only the slow route needs a short timeout; the others must not trip it on a busy machine.
            $0.dataLoader = DataLoader(timeout: route == "slow" ? 0.5 : 15, maximumResponseBytes: 1 << 20)
        }
        let path =
            switch route {
            case "404": "/status/404"
            case "500": "/status/500"
            case "slow": "/held/never/images/0.jpg"  // a response that never comes
            case "truncated": "/truncated/images/0.jpg"
            case "html": "/html-as-jpeg"
            case "oversized": "/oversized/\(8 << 20)"
            default: "/images/corrupt.jpg"
            }
        let url = server.url(path)
        let error = await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        }
        switch (route, error) {
        case ("404", .httpStatus(404, _)?), ("500", .httpStatus(500, _)?), ("slow", .timedOut?),
            ("truncated", .truncatedResponse?), ("html", .decodingFailed?), ("oversized", .responseTooLarge?),
            ("corrupt", .decodingFailed?):
            break
        default:
            Issue.record("route \(route) gave \(String(describing: error))")
        }
        #expect(store.variants.count == 0)
        #expect(store.originals.count == 0)
        #expect(store.diskFileNames.isEmpty)
        #expect(store.cachedPixelSize(for: url) == nil)
        #expect(store.statistics.failures == 1)
    }

    @Test func anIPv6HostFailsWithAnErrorThatSaysWhy() async throws {
        // URLSession on Linux refuses every IPv6 literal host as a bad URL ("error -1000", nothing more);
        // nothing listens on port 1, so a URLSession that takes such hosts fails to connect instead.
        let root = TemporaryDirectory("root")
        let store = try ImageStore.makeForTesting(root: root.url)
        let url = URL(string: "http://[::1]:1/a.jpg")!
        let error = await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: url))
        }
        guard case .network(let failed, let description)? = error else {
            Issue.record("not a network error: \(String(describing: error))")
            return
        }
        #expect(failed == url)
        #expect(!description.contains("-1000"), "\(description)")
        #expect(
            description.contains("IPv6") || description.localizedCaseInsensitiveContains("connect"), "\(description)")
        #expect(store.cachedOriginalBytes(for: url) == nil)
    }

    @Test func anUnsupportedSchemeIsATypedError() async throws {
        let root = TemporaryDirectory("root")
        let store = try ImageStore.makeForTesting(root: root.url)
        let url = URL(string: "ftp://127.0.0.1/a.jpg")!
        await #expect(throws: ImageLoadingError.unsupportedURL(url)) {
            try await store.image(for: ImageRequest(url: url))
        }
    }
}
