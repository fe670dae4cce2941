import Foundation
import Testing

@testable import AsyncImageCache

/// A loader scripted per call: each call takes the next answer, and waits while `gate(call)` says so
/// until ``open()``. Counts calls per URL.
final class ScriptedLoader: DataLoading, @unchecked Sendable {
    // Everything below is only touched while holding `lock`.
    private let lock = NSLock()
    private var calls: [URL] = []
    private var isOpen = false
    private let answers: (Int, URL) -> (Data, HTTPCachePolicy)
    private let gated: (Int, URL) -> Bool

    init(gated: @escaping (Int, URL) -> Bool, answers: @escaping (Int, URL) -> (Data, HTTPCachePolicy)) {
        self.gated = gated
        self.answers = answers
    }

    var callCount: Int { lock.withLock { calls.count } }
    func callCount(for url: URL) -> Int { lock.withLock { calls.filter { $0 == url }.count } }

    func open() { lock.withLock { isOpen = true } }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        guard case .modified(let data, _) = try await loadData(for: url, revalidating: nil) else { throw .cancelled }
        return data
    }

    func loadData(
        for url: URL, revalidating validators: HTTPCachePolicy?
    ) async throws(ImageLoadingError) -> ConditionalLoadResult {
        let index = lock.withLock { () -> Int in
            calls.append(url)
            return calls.count - 1
        }
        if gated(index, url) {
            while !lock.withLock({ isOpen }) {
                do { try await Task.sleep(for: .milliseconds(5)) } catch { throw .cancelled }
            }
        }
        let (data, policy) = answers(index, url)
        return .modified(data, policy)
    }
}

@Suite struct ImageStoreRemoveImageRevalidationTests {
    /// A revalidation already asking the source when `removeImage(for:)` runs puts its answer in
    /// both tiers afterwards: the next load serves it from memory, fetching nothing.
    @Test func aRevalidationInFlightDuringRemoveImageKeepsNothing() async throws {
        let folder = TemporaryDirectory("review-revalidation")
        let first = try SampleImages.jpeg(width: 64, height: 48)
        let answeredBeforeTheChange = try SampleImages.jpeg(width: 64, height: 40)
        let loader = ScriptedLoader(gated: { index, _ in index == 1 }) { index, _ in
            // The first answer is stale at once, so the next load revalidates it.
            index == 0 ? (first, HTTPCachePolicy(maxAge: 0)) : (answeredBeforeTheChange, HTTPCachePolicy(maxAge: 3600))
        }
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let url = URL(string: "https://images.example.com/avatar.jpg")!
        let request = ImageRequest(url: url, targetWidth: 32)
        _ = try await store.image(for: request)
        try await Task.sleep(for: .milliseconds(20))
        _ = try await store.image(for: request)  // a hit on a stale entry: revalidates in the background
        try await waitUntil { loader.callCount == 2 }
        store.removeImage(for: url)
        loader.open()
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        store.waitForDiskMaintenance()
        #expect(store.diskFileNames.isEmpty, "removeImage ran, yet the disk tier holds \(store.diskFileNames)")
        #expect(store.cachedOriginalBytes(for: url) == nil)
        _ = try await store.image(for: request)
        #expect(loader.callCount == 3, "the load after removeImage fetched nothing")
    }
}
