import Foundation
import Testing

@testable import AsyncImageCache

/// `removeAll()` deletes every entry for good: a load that was already fetching when it ran still
/// delivers its image, but does not write the entry back into the disk tier or the memory tiers.
@Suite struct ImageStoreRemoveAllRaceTests {
    @Test func aLoadInFlightDuringRemoveAllDoesNotRecreateItsEntry() async throws {
        let folder = TemporaryDirectory("remove-all-race")
        let loader = GatedLoader(bytes: try SampleImages.jpeg(width: 64, height: 48))
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let load = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 32)) }
        try await waitUntil { loader.hasStarted }
        store.removeAll()
        loader.open()
        #expect(try await load.value.pixelSize.width == 32)
        store.waitForDiskMaintenance()
        #expect(store.diskFileNames.isEmpty, "removeAll() ran, yet the disk tier holds \(store.diskFileNames)")
        #expect(store.cachedOriginalBytes(for: url) == nil)
    }
}

/// A loader whose fetches wait until ``open()`` is called, then answer `bytes` with a long lifetime.
final class GatedLoader: DataLoading, @unchecked Sendable {
    // `started` and `isOpen` are only touched while holding `lock`.
    private let lock = NSLock()
    private var started = false
    private var isOpen = false
    private let bytes: Data

    init(bytes: Data) {
        self.bytes = bytes
    }

    var hasStarted: Bool { lock.withLock { started } }

    func open() {
        lock.withLock { isOpen = true }
    }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        lock.withLock { started = true }
        while !lock.withLock({ isOpen }) {
            do { try await Task.sleep(for: .milliseconds(5)) } catch { throw .cancelled }
        }
        return bytes
    }

    func loadData(
        for url: URL, revalidating validators: HTTPCachePolicy?
    ) async throws(ImageLoadingError) -> ConditionalLoadResult {
        .modified(try await loadData(for: url), HTTPCachePolicy(maxAge: 3600))
    }
}
