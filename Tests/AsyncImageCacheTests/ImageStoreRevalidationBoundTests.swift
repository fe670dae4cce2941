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

    @Test func aHostThatDoesNotAnswerItsChecksHoldsUpNoOtherHostsChecks() async throws {
        let folder = TemporaryDirectory("revalidation-hosts")
        try SampleImages.jpeg(width: 16, height: 16).write(to: folder.url.appendingPathComponent("dot.jpg"))
        let stalled = try await TestHTTPServer(serving: folder.url)
        defer { stalled.stop() }
        let other = try await TestHTTPServer(serving: folder.url)
        defer { other.stop() }
        // The checks held wait for the test, which a loaded machine may stall past the default timeout.
        let loader = DataLoader(timeout: 600)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"), name: "hosts") {
            $0.dataLoader = loader
        }
        // As many stale images of a host that never answers their checks as a host may have checked at once.
        let urls = (0..<ImageStore.revalidationLimit).map {
            stalled.url("/held-conditional/k/cache/max-age=0/images/dot.jpg?\($0)")
        }
        for url in urls { _ = try await store.image(for: ImageRequest(url: url, targetWidth: 8)) }
        for url in urls { _ = try await store.image(for: ImageRequest(url: url, targetWidth: 8)) }
        #expect(store.revalidating.withLock { $0.count } == urls.count)
        // A stale image of another host, shown again: its check starts as it is shown.
        let path = "/cache/max-age=0/images/dot.jpg"
        let request = ImageRequest(url: other.url(path), targetWidth: 8)
        _ = try await store.image(for: request)
        _ = try await store.image(for: request)
        // Started as it is shown: still running, or already over, as the other host answers at once and
        // a loaded machine may run the whole check before this reads the count. A check asks the server
        // before it ends, so read in this order, one of the two sees it.
        let checks = store.revalidating.withLock { $0.count } - urls.count
        let asked = try await other.hits(for: path) - 1
        #expect(
            checks == 1 || asked == 1,
            "the other host's stale image started \(checks) checks behind a host that does not answer (\(asked) asked)")
        if checks == 1 || asked == 1 { try await waitUntil { try await other.hits(for: path) == 2 } }
        try await stalled.release("k")
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        store.waitForDiskMaintenance()
    }

    @Test func revalidationsAreBoundedPerHostAndInAll() {
        var running = Revalidations()
        var started: [String] = []
        func start(_ keys: String...) {
            for key in keys where running.insert(key, host: String(key.prefix(1)), hostLimit: 2, limit: 3) {
                started.append(key)
            }
        }
        // One at a time per URL, two of a host, three in all.
        start("a0", "a0", "a1", "a2", "b0", "c0")
        #expect(started == ["a0", "a1", "b0"])
        running.remove("a0")
        running.remove("a0")
        #expect(running.count == 2)
        start("a2", "c0")
        #expect(started == ["a0", "a1", "b0", "a2"])
        for key in ["a1", "a2", "b0"] { running.remove(key) }
        #expect(running.isEmpty)
        start("c0")
        #expect(started.last == "c0")
    }
}
