import Foundation
import Testing

@testable import AsyncImageCache

/// A load that fails is not tried again until the next `load()` (the next time the view is shown),
/// whatever the layout does meanwhile.
@MainActor @Suite(.timeLimit(.minutes(3))) struct CachedImageModelFailureTests {
    /// A window resized over a missing image (a 404) lays it out again at every step. Before, each step
    /// that found no image started a load: 11 requests to the server for the first load and 10 steps.
    @Test func aFailedLoadIsNotTriedAgainAtEveryLayoutButAtTheNextLoad() async throws {
        let images = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 64, height: 48)], into: images.url)
        let server = try await TestHTTPServer(serving: images.url)
        // The folder outlives the server, which serves from it.
        defer { withExtendedLifetime(images) { server.stop() } }
        let store = try ImageStore.makeForTesting(root: images.url.appendingPathComponent("cache"))
        let model = CachedImageModel(url: server.url("/images/missing.jpg"), displayScale: 2, store: store)
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        await model.load()
        #expect(model.image == nil)
        for step in 1...10 {
            model.layoutChanged(to: CGSize(width: 100 + CGFloat(step), height: 67))
            // Waits (up to 2 s a step) for a load started by the layout to fail in turn.
            for _ in 0..<200 where model.isLoading { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(try await server.hits(for: "/images/missing.jpg") == 1)
        // Shown again: tried again, once.
        model.disappear()
        await model.load()
        #expect(try await server.hits(for: "/images/missing.jpg") == 2)
        #expect(store.statistics.failures == 2)
    }
}
