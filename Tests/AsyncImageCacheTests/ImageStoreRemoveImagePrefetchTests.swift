import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct ImageStoreRemoveImagePrefetchTests {
    /// A prefetch asked for after `removeImage(for:)` is skipped while one begun before still runs;
    /// that one keeps nothing, so nothing is prefetched.
    @Test func aPrefetchAskedForAfterRemoveImageKeepsItsImage() async throws {
        let folder = TemporaryDirectory("review-prefetch")
        let bytes = try SampleImages.jpeg(width: 64, height: 48)
        let loader = ScriptedLoader(gated: { _, _ in true }) { _, _ in (bytes, HTTPCachePolicy(maxAge: 3600)) }
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let url = URL(string: "https://images.example.com/avatar.jpg")!
        let request = ImageRequest(url: url, targetWidth: 32)
        store.startPrefetching([request])
        try await waitUntil { loader.callCount == 1 }
        store.removeImage(for: url)
        store.startPrefetching([request])
        loader.open()
        try await waitUntil { store.prefetches.withLock { $0.running.isEmpty } }
        store.waitForDiskMaintenance()
        #expect(store.cachedImage(for: request) != nil, "prefetched after removeImage, yet nothing is in memory")
        #expect(!store.diskFileNames.isEmpty, "prefetched after removeImage, yet nothing is on disk")
    }
}
