import Foundation
import Testing

@testable import AsyncImageCache

/// The caching facts a store keeps in memory are bounded in bytes, not only in entries: a server's
/// validators may be as long as a header line.
///
/// 200 loads with 60 KB headers take about 10 s, but 50 to 200 s under ThreadSanitizer (`scripts/test-tsan`),
/// hence a limit that only a hang reaches.
@Suite(.timeLimit(.minutes(5))) struct ImageStoreCachingFactsMemoryTests {
    @Test func longValidatorsOnManyURLsStayWithinTheByteLimit() async throws {
        let folder = TemporaryDirectory("caching-facts-memory")
        try SampleImages.jpeg(width: 16, height: 16).write(to: folder.url.appendingPathComponent("dot.jpg"))
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"), name: "facts")
        // 60 KB an entity tag (libcurl takes header lines up to 100 KB): 200 of them are 12 MB.
        let tagLength = 60_000
        let urls = (0..<200).map { server.url("/long-etag/\(tagLength)/u\($0)/images/dot.jpg") }
        for url in urls {
            _ = try await store.image(for: ImageRequest(url: url, targetWidth: 8))
        }
        let kept = store.cacheMetadata.keysByRecency.compactMap { store.cacheMetadata.value(forKey: $0) }
        let tagBytes = kept.reduce(0) { $0 + ($1.entityTag?.utf8.count ?? 0) }
        #expect(tagBytes <= ImageStore.cacheMetadataByteLimit)
        #expect(store.cacheMetadata.totalCost <= ImageStore.cacheMetadataByteLimit)
        // What it keeps is the latest, whole.
        let latest = try #require(store.cacheMetadata.value(forKey: urls[199].cacheKey))
        #expect(latest.entityTag?.utf8.count == tagLength)
        #expect(latest.entityTag?.hasPrefix("\"u199-") == true)
        #expect(kept.count > 100)
    }
}
