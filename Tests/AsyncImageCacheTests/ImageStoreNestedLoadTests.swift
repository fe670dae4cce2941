import Foundation
import Testing

@testable import AsyncImageCache

/// A custom ``DataLoading`` may load through the store it serves (an image made of other images, say).
@Suite(.timeLimit(.minutes(2))) struct ImageStoreNestedLoadTests {
    /// Cancelling a load cancelled its run's task with the run table's lock held, which ran the
    /// cancellation handlers of every wait inside it on the same thread: down to the loader's own load
    /// through the store, whose handler asked for that lock again. `cancel()` never returned, and every
    /// later load of the store waited for the lock. An exit test, so that a stuck thread stays in its
    /// own process.
    @Test func cancellingALoadWhoseLoaderLoadsThroughTheSameStoreReturns() async {
        await #expect(processExitsWith: .success) {
            let served = TemporaryDirectory("nested-load-served")
            let names = try SampleImages.writeJPEGs([PixelSize(width: 64, height: 48)], into: served.url)
            let server = try await TestHTTPServer(serving: served.url)
            defer { server.stop() }
            let held = server.url("/held/never/images/\(names[0])")
            let root = TemporaryDirectory("nested-load")
            let storeOfLoader = LockedBox<ImageStore?>(nil)
            let store = try ImageStore.makeForTesting(root: root.url) {
                $0.dataLoader = NestingLoader(store: storeOfLoader, inner: held)
            }
            storeOfLoader.withLock { $0 = store }
            let outer = Task { try await store.image(for: ImageRequest(url: URL(string: "nest:a")!, targetWidth: 16)) }
            try await waitUntil { try await server.hits(for: held.path) == 1 }

            let returned = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                outer.cancel()
                returned.signal()
            }
            precondition(returned.wait(timeout: .now() + 10) == .success, "cancel() never returned")
            let result = await outer.result
            guard case .failure(let error as ImageLoadingError) = result, case .cancelled = error else {
                preconditionFailure("\(result)")
            }
            // The store still loads.
            let other = server.url("/images/\(names[0])")
            let image = try await store.image(for: ImageRequest(url: other, targetWidth: 32))
            precondition(image.pixelSize == PixelSize(width: 32, height: 24))
        }
    }
}

/// Loads `nest:` URLs by loading `inner` through the store and handing back its bytes; other URLs as the
/// default loader does.
private struct NestingLoader: DataLoading {
    let store: LockedBox<ImageStore?>
    let inner: URL
    let fallback = DataLoader()

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        guard url.scheme == "nest" else { return try await fallback.loadData(for: url) }
        guard let store = store.withLock({ $0 }) else { throw .cancelled }
        do {
            _ = try await store.image(for: ImageRequest(url: inner, targetWidth: 16))
        } catch {
            throw .cancelled
        }
        guard let bytes = store.cachedOriginalBytes(for: inner) else { throw .cancelled }
        return bytes.data
    }
}
