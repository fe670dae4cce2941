import Foundation
import Testing

@testable import AsyncImageCache

/// A stale entry whose revalidation fails (the server is gone, or sends what is not an image) keeps
/// its image, and the next loads do not ask again at once: a list scrolled offline, or a server
/// that now answers with an error page, costs one request per image, not one per appearance.
@Suite struct ImageStoreRevalidationBackoffTests {
    let folder = TemporaryDirectory("revalidation-backoff")
    let server: TestHTTPServer
    let path = "/cache/no-cache/images/photo.jpg"

    init() async throws {
        try SampleImages.jpeg(width: 320, height: 240).write(to: folder.url.appendingPathComponent("photo.jpg"))
        server = try await TestHTTPServer(serving: folder.url)
    }

    private func store() throws -> ImageStore {
        try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"), name: "backoff")
    }

    /// Loads `url` three times, each after the previous revalidation ended.
    private func loadThrice(_ store: ImageStore, _ url: URL) async throws {
        for width in [100, 80, 60] as [CGFloat] {
            let image = try await store.image(for: ImageRequest(url: url, targetWidth: width))
            #expect(image.pixelSize.width >= Int(width))  // a larger decode serves a smaller frame
            try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        }
    }

    @Test func aServerThatIsGoneIsAskedOnceNotAtEveryLoad() async throws {
        let store = try store()
        let url = server.url(path)
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 120))
        server.stop()
        try await loadThrice(store, url)
        #expect(store.statistics.revalidations == 1)
    }

    @Test func aServerThatSendsWhatIsNotAnImageIsAskedOnceNotAtEveryLoad() async throws {
        let store = try store()
        let url = server.url(path)
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 120))
        try Data("<html>moved</html>".utf8).write(to: folder.url.appendingPathComponent("photo.jpg"))
        try await loadThrice(store, url)
        #expect(try await server.hits(for: path) == 2)
        #expect(store.statistics.revalidations == 1)
    }

    @Test func theDelayDoublesWithEachFailureInARowUpToAnHourAndASuccessEndsIt() {
        let start = Date(timeIntervalSince1970: 1_000_000)
        var metadata = HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 0), receivedAt: start)
        #expect(metadata.needsRevalidation(at: start))
        var delays: [TimeInterval] = []
        for _ in 0..<10 {
            metadata = metadata.afterFailedRevalidation(at: start)
            delays.append(metadata.retryAfter!.timeIntervalSince(start))
            #expect(!metadata.needsRevalidation(at: start.addingTimeInterval(delays.last! - 1)))
            #expect(metadata.needsRevalidation(at: start.addingTimeInterval(delays.last!)))
        }
        #expect(delays == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600])
        // Only in memory: the file's attribute keeps the entry as the response left it.
        #expect(HTTPCacheMetadata(encoded: metadata.encoded)?.retryAfter == nil)
        #expect(metadata.refreshed(by: HTTPCachePolicy(maxAge: 0), at: start).retryAfter == nil)
    }
}
