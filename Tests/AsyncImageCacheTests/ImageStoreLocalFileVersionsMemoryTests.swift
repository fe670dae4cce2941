import Foundation
import Testing

@testable import AsyncImageCache

/// The versions of local files a store remembers are bounded in the bytes of their keys, as the size
/// memo is, not only in entries: a `file:` URL's key is its whole string, a query or fragment included.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreLocalFileVersionsMemoryTests {
    @Test func longFileURLsLoadedKeepTheirVersionsWithinTheKeyByteLimit() async throws {
        let folder = TemporaryDirectory("local-versions-memory")
        let file = folder.url.appendingPathComponent("dot.jpg")
        try SampleImages.jpeg(width: 16, height: 16).write(to: file)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        // 64 KB a key: 100 of them are 6.4 MB.
        let query = String(repeating: "q", count: 64 * 1024)
        var keyBytes = 0
        for index in 0..<100 {
            let url = try #require(URL(string: file.absoluteString + "?\(index)-" + query))
            keyBytes += url.cacheKey.utf8.count
            #expect(try await store.image(for: ImageRequest(url: url, targetWidth: 8)).pixelSize.width == 8)
        }
        #expect(keyBytes > 6_000_000)
        let kept = store.localFileVersions.keysByRecency.reduce(0) { $0 + $1.utf8.count }
        #expect(kept <= ImageStore.sizeMemoKeyByteLimit, "the file versions hold \(kept) bytes of keys")
        #expect(store.localFileVersions.count > 10)
    }
}
