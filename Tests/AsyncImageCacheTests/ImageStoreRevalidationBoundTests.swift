import Foundation
import Testing

@testable import AsyncImageCache

/// The background revalidations a store runs at once are bounded: a host that answers downloads and
/// never their revalidations cannot make it hold one check per stale image shown.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreRevalidationBoundTests {
    @Test func staleImagesShownWhileTheirHostDoesNotAnswerChecksHoldABoundedNumberOfRevalidations() async throws {
        let folder = TemporaryDirectory("revalidation-bound")
        try SampleImages.jpeg(width: 16, height: 16).write(to: folder.url.appendingPathComponent("dot.jpg"))
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"), name: "bound")
        // Stale at once, and their checks get no answer until released.
        let urls = (0..<100).map { server.url("/held-conditional/k/cache/max-age=0/images/dot.jpg?\($0)") }
        for url in urls { _ = try await store.image(for: ImageRequest(url: url, targetWidth: 8)) }
        // Each shown again: a memory hit on a stale entry, which starts its check.
        for url in urls { _ = try await store.image(for: ImageRequest(url: url, targetWidth: 8)) }
        let inFlight = store.revalidating.withLock { $0.count }
        #expect(inFlight <= 64, "\(inFlight) revalidations in flight for \(urls.count) stale images shown")
        try await server.release("k")
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        // One that was not checked then is checked when it is shown again.
        let before = store.statistics.revalidations
        _ = try await store.image(for: ImageRequest(url: urls[99], targetWidth: 8))
        try await waitUntil { store.statistics.revalidations == before + 1 }
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        store.waitForDiskMaintenance()
    }
}
