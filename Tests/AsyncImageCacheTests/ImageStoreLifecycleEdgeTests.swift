import Foundation
import Testing

@testable import AsyncImageCache

/// Configuration values at their extremes, and what a load cut short keeps once the store was emptied.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreLifecycleEdgeTests {
    /// `decodeConcurrency` is an `Int` the store clamps below (0 and negatives mean 1); an app that asks
    /// for no limit with `.max` must get prefetching, not a trap on the overflow of twice the limit.
    @Test func prefetchingWithAnUnboundedDecodeConcurrencyDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let names = try SampleImages.writeJPEGs([PixelSize(width: 64, height: 48)], into: folder.url)
            for concurrency in [Int.max, Int.max / 2 + 1] {
                let store = try ImageStore.makeForTesting(
                    root: folder.url.appendingPathComponent("cache"), name: "c\(concurrency)"
                ) { $0.decodeConcurrency = concurrency }
                let request = ImageRequest(url: folder.url.appendingPathComponent(names[0]), targetWidth: 32)
                store.startPrefetching([request])  // before: arithmetic overflow in `prefetchConcurrency`
                try await waitUntil { store.cachedImage(for: request) != nil }
                precondition(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 32, height: 24))
            }
        }
    }

    /// A store let go while its last download was still ending: the load failed at its 404 and returned,
    /// and the download's entry, which held the run's fetch slot, ended after it. That slot held the last
    /// reference to the store, so the loader went with the entry, and its `deinit` asked for the lock the
    /// entry was ending under: the delegate thread waited for itself for ever, and the session, its
    /// connection and the loader's table of downloads were never freed (3 descriptors and a thread a
    /// store). An exit test, so that a stuck thread stays in its own process.
    @Test func aStoreLetGoAsItsLastDownloadEndsFreesTheLoadersDownloads() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let names = try SampleImages.writeJPEGs([PixelSize(width: 64, height: 48)], into: folder.url)
            let server = try await TestHTTPServer(serving: folder.url)
            defer { server.stop() }
            for index in 0..<4 {
                weak var table: HTTPTaskTable?
                do {
                    let store = try ImageStore.makeForTesting(
                        root: folder.url.appendingPathComponent("cache"), name: "s\(index)")
                    let image = ImageRequest(url: server.url("/alias/\(index)/images/\(names[0])"), targetWidth: 32)
                    let loaded = try await store.image(for: image)
                    precondition(loaded.pixelSize == PixelSize(width: 32, height: 24))
                    table = (store.configuration.dataLoader as? DataLoader)?.http.madeTasks
                    precondition(table != nil, "the download made the loader's session and table")
                    let missing = ImageRequest(url: server.url("/status/404?\(index)"), targetWidth: 32)
                    let failed = try? await store.image(for: missing)
                    precondition(failed == nil)
                }
                var freed = false
                for _ in 0..<200 where !freed {
                    try await Task.sleep(for: .milliseconds(50))
                    freed = table == nil
                }
                precondition(freed, "store \(index): the loader's table of downloads outlived it")
            }
        }
    }

    /// A pixel budget below 1 fits no bitmap. Before, the store was made and every load of it failed
    /// at its decode with `.pixelBudgetExceeded`, far from the line that set the budget; now the store
    /// is refused with an error that names the budget. A budget of 1 is a store like any other.
    @Test(arguments: [0, -1, Int.min])
    func aPixelBudgetBelowOneIsRefused(budget: Int) throws {
        let root = TemporaryDirectory("root")
        var configuration = ImageStore.Configuration(name: "budget")
        configuration.rootDirectory = root.url
        configuration.pixelBudget = budget
        #expect(throws: ImageStore.ConfigurationError.invalidPixelBudget(budget)) {
            try ImageStore(configuration: configuration)
        }
        #expect(ImageStore.ConfigurationError.invalidPixelBudget(budget).localizedDescription.contains("\(budget)"))
        configuration.pixelBudget = 1
        #expect(try ImageStore(configuration: configuration).configuration.pixelBudget == 1)
    }

    /// Two images, `0.jpg` and `1.jpg`, in `folder`, and a store with one decode slot and a gated decoder.
    private static func storeWithOneGatedSlot(
        images folder: TemporaryDirectory
    ) throws -> (store: ImageStore, decoder: GatedDecoder) {
        try SampleImages.writeJPEGs(
            [PixelSize(width: 64, height: 48), PixelSize(width: 80, height: 60)], into: folder.url)
        let decoder = GatedDecoder()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 1
            $0.decoder = decoder
        }
        return (store, decoder)
    }

    /// Loads `request` while a load of `busy` holds the one decode slot, runs `whileWaiting` once `request`'s
    /// bytes wait for the slot, cancels that load, and lets the slot go; then checks that nothing was held for
    /// the next load, and that the next load still gives the image.
    private static func cancelWhileWaitingForTheSlot(
        _ request: ImageRequest, behind busy: ImageRequest, store: ImageStore, decoder: GatedDecoder,
        whileWaiting: () -> Void = {}
    ) async throws {
        let occupying = Task { try await store.image(for: busy) }
        try await waitUntil { decoder.enteredCount == 1 }
        let waiting = Task { try await store.image(for: request) }
        try await waitUntil { store.decodeSlots.waitingCount == 1 }
        whileWaiting()
        waiting.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await waiting.value }
        decoder.open()
        _ = try await occupying.value

        #expect(store.undecodedOriginals.count == 0)
        #expect(store.undecodedOriginals.totalCost == 0)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 32, height: 24))
    }

    /// A download cancelled while it waited for a decode slot is held for the next load. Fetched before a
    /// `removeAll()` (or a `removeImage(for:)` of its URL) that ran since, it can never be used again (the
    /// next load finds it out of date and drops it), so it must not be held: "Empties memory", and a load
    /// already under way "keeps nothing". (Before: 1 entry, the old download's bytes.)
    @Test(arguments: [true, false])
    func aDownloadCancelledAfterTheStoreWasEmptiedIsNotHeld(removingEverything: Bool) async throws {
        let folder = TemporaryDirectory("images")
        let (store, decoder) = try Self.storeWithOneGatedSlot(images: folder)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let request = ImageRequest(url: server.url("/images/1.jpg"), targetWidth: 32)
        try await Self.cancelWhileWaitingForTheSlot(
            request, behind: ImageRequest(url: server.url("/images/0.jpg"), targetWidth: 32), store: store,
            decoder: decoder
        ) {
            if removingEverything { store.removeAll() } else { store.removeImage(for: request.url) }
        }
        // The next load fetched afresh.
        #expect(try await server.hits(for: "/images/1.jpg") == 2)
    }

    /// The docs hold back only *downloads* whose load was cancelled before they decoded ("bytes just
    /// downloaded are held for the next load"; TuningTheBudgets: "downloads whose load was cancelled before
    /// they decoded, held"). A local file is read in place and costs one read to get again: a fling past
    /// rows of local photos must not leave their whole files in memory, outside the originals' budget.
    /// (Before: 1 entry holding the whole file's bytes.)
    @Test func aLocalFileWhoseLoadWasCancelledBeforeItDecodedIsNotHeldInMemory() async throws {
        let folder = TemporaryDirectory("local")
        let (store, decoder) = try Self.storeWithOneGatedSlot(images: folder)
        try await Self.cancelWhileWaitingForTheSlot(
            ImageRequest(url: folder.url.appendingPathComponent("1.jpg"), targetWidth: 32),
            behind: ImageRequest(url: folder.url.appendingPathComponent("0.jpg"), targetWidth: 32), store: store,
            decoder: decoder)
    }
}
