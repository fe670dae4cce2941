import Foundation
import Testing

@testable import AsyncImageCache

/// A remote image the model draws from memory is checked with its server when its caching facts say it
/// is stale, as a store load answered from memory checks it: each time the view is shown.
@MainActor @Suite(.timeLimit(.minutes(3))) struct CachedImageModelRevalidationTests {
    /// A `no-cache` photo loaded once, then drawn from memory by a model shown twice. Before, the model
    /// took it from memory without a load, so the server was never asked again while memory held it
    /// (statuses stayed [200]); the store's own load asks at each load.
    @Test func aStaleRemoteImageDrawnFromMemoryIsAskedForAgainEachTimeItIsShown() async throws {
        let folder = TemporaryDirectory("model-revalidation")
        try SampleImages.jpeg(width: 320, height: 240).write(to: folder.url.appendingPathComponent("photo.jpg"))
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let path = "/cache/no-cache/images/photo.jpg"
        let url = server.url(path)
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 200))
        #expect(try await server.statuses(for: path) == [200])

        let model = CachedImageModel(
            url: url, displayScale: 2, layoutSize: CGSize(width: 100, height: 75), store: store)
        #expect(model.image?.pixelSize.width == 200)  // from memory, before it is shown
        await model.load()
        try await waitUntil { try await server.statuses(for: path) == [200, 304] }
        // Another layout drawn from memory while shown asks nothing more.
        model.layoutChanged(to: CGSize(width: 90, height: 67))
        model.disappear()
        await model.load()
        try await waitUntil { try await server.statuses(for: path) == [200, 304, 304] }
        #expect(model.image?.pixelSize.width == 200)
        #expect(store.statistics.notModified == 2)
        model.disappear()
    }
}
