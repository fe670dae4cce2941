import Foundation
import Testing

@testable import AsyncImageCache

/// One fetch per URL, one decode per request, and cancellation that reaches the download.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreCoalescingTests {
    @Test func fiftyConcurrentLoadsOfOneRequestFetchAndDecodeOnce() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 800, height: 600)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let decoder = CountingDecoder()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = decoder
        }
        let path = "/slow/300/images/0.jpg"
        let request = ImageRequest(url: server.url(path), targetWidth: 200)
        let completions = LockedBox([Int: Int]())
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask {
                    let image = try? await store.image(for: request)
                    if image?.pixelSize == PixelSize(width: 200, height: 150) {
                        completions.withLock { $0[index, default: 0] += 1 }
                    }
                }
            }
        }
        #expect(try await server.hits(for: path) == 1)
        #expect(decoder.count == 1)
        #expect(completions.withLock { $0 }.count == 50)
        #expect(completions.withLock { $0 }.values.allSatisfy { $0 == 1 })
    }

    @Test func eightWidthsOfOneURLFetchItOnce() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 1000, height: 500)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let path = "/slow/200/images/0.jpg"
        let widths = [40, 80, 120, 160, 240, 320, 480, 640]
        let sizes = try await withThrowingTaskGroup(of: PixelSize.self) { group in
            for width in widths {
                group.addTask {
                    try await store.image(for: ImageRequest(url: server.url(path), targetWidth: CGFloat(width)))
                        .pixelSize
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(try await server.hits(for: path) == 1)
        #expect(Set(sizes) == Set(widths.map { PixelSize(width: $0, height: $0 / 2) }))
        #expect(store.statistics.decodes == widths.count)
    }

    @Test func aWidthAskedForWhileAnotherWaitsToDecodeSharesItsFetch() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 400, height: 200)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let gate = GatedDecoder()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
            $0.decodeConcurrency = 2
        }
        let url = server.url("/images/0.jpg")
        let first = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 50)) }
        // Fetched, and held in its decode: the bytes are in neither tier yet.
        try await waitUntil { gate.enteredCount == 1 && store.fetchRuns.count == 0 }
        let second = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 100)) }
        try await waitUntil { gate.enteredCount == 2 || store.statistics.sourceFetches == 2 }
        gate.open()
        #expect(try await first.value.pixelSize == PixelSize(width: 50, height: 25))
        #expect(try await second.value.pixelSize == PixelSize(width: 100, height: 50))
        #expect(try await server.hits(for: "/images/0.jpg") == 1)
    }

    @Test func cancellingEveryWaiterCancelsTheDownloadAndTheDecode() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        // The response is held until the test lets it go (never, here): the cancellation lands while it is
        // pending however loaded the machine, and the request's timeout is far beyond any stall.
        let loader = RecordingLoader(base: DataLoader(timeout: 600))
        let decoder = CountingDecoder()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
            $0.decoder = decoder
        }
        let path = "/held/never/images/0.jpg"
        let request = ImageRequest(url: server.url(path), targetWidth: 100)
        let waiters = (0..<3).map { _ in Task { try await store.image(for: request) } }
        try await waitUntil { try await server.hits(for: path) == 1 }
        waiters.forEach { $0.cancel() }
        for waiter in waiters {
            await #expect(throws: ImageLoadingError.cancelled) { try await waiter.value }
        }
        // The one download ended in cancellation.
        try await waitUntil { loader.results.count == 1 }
        #expect(loader.results.first.map { if case .failure(.cancelled) = $0 { true } else { false } } == true)
        #expect(decoder.count == 0)
        #expect(store.variantRuns.count == 0 && store.fetchRuns.count == 0)
        #expect(store.statistics.failures == 0)
    }

    @Test func aWaiterThatStaysGetsItsImageWhenAnotherLeaves() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = DataLoader(timeout: 600)  // the response is pending as long as the test takes
        }
        // Held until the one leaving is cancelled, however loaded the machine.
        let path = "/held/stay/images/0.jpg"
        let request = ImageRequest(url: server.url(path), targetWidth: 150)
        let leaving = Task { try await store.image(for: request) }
        let staying = Task { try await store.image(for: request) }
        // Both wait for the download before one leaves: a Task's first turn may run after the other's
        // request reached the server, and cancelling the only waiter stops the download.
        try await waitUntil {
            try await server.hits(for: path) == 1 && store.variantRuns.waiterCount(for: request) == 2
        }
        leaving.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await leaving.value }
        try await server.release("stay")
        #expect(try await staying.value.pixelSize == PixelSize(width: 150, height: 100))
        #expect(try await server.hits(for: path) == 1)
    }

    @Test func aCancelledLoadTaskStillCallsItsCompletionOnceWithNil() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let calls = LockedBox([Bool]())
        let task = store.load(ImageRequest(url: server.url("/held/never/images/0.jpg"))) { image in
            calls.withLock { $0.append(image != nil) }
        }
        task.cancel()
        try await waitUntil { !calls.withLock { $0 }.isEmpty }
        try await Task.sleep(for: .milliseconds(200))
        #expect(calls.withLock { $0 } == [false])
    }
}

extension ImageStoreCoalescingTests {
    @MainActor
    @Test func aLoadCancelledBeforeItsCompletionGetsNilEvenWhenTheImageIsInMemory() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 100, height: 75)], into: folder.url)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let request = ImageRequest(url: folder.url.appendingPathComponent("0.jpg"))
        _ = try await store.image(for: request)
        #expect(store.cachedImage(for: request) != nil)
        // A reused cell cancels its load; the image must not land in the cell that now shows another URL.
        let calls = LockedBox([Bool]())
        let task = store.load(request) { image in calls.withLock { $0.append(image != nil) } }
        task.cancel()
        try await waitUntil { !calls.withLock { $0 }.isEmpty }
        #expect(calls.withLock { $0 } == [false])
    }
}

extension ImageStoreCoalescingTests {
    /// A row flung past whose image is in memory but stale: its load, cancelled in the same turn, shows
    /// nothing, so it asks the server nothing either (before: a revalidation went out for it, status 304
    /// on the loopback server, a whole download and a check decode had the image changed).
    @MainActor
    @Test func aLoadCancelledBeforeItStartsDoesNotRevalidateAStaleImageInMemory() async throws {
        let stale = try await StaleImage()
        defer { stale.server.stop() }
        let request = ImageRequest(url: stale.url)
        #expect(stale.store.cachedImage(for: request) != nil)
        #expect(try await stale.loadAndCancel(request) == [false])
        #expect(stale.store.statistics.revalidations == 0)
        let statuses = try await stale.server.statuses(for: StaleImage.path)
        #expect(statuses == [200], "the server was asked for a row flung past: \(statuses)")
    }

    /// The same where the row's variant is not in memory and its bytes are: in the tier of originals (a
    /// request with other corners than the decode in memory), or on disk only (after a `clearMemory()`).
    /// The load, cancelled in the turn that starts it, asks the server nothing; the next load that shows
    /// the image revalidates it.
    @MainActor
    @Test func aLoadCancelledBeforeItStartsDoesNotRevalidateStaleBytesInMemoryOrOnDisk() async throws {
        let stale = try await StaleImage()
        defer { stale.server.stop() }
        let store = stale.store
        store.waitForDiskMaintenance()
        let rounded = ImageRequest(url: stale.url, targetWidth: 50, cornerRadius: 10)
        #expect(store.cachedImage(for: rounded) == nil)
        #expect(try await stale.loadAndCancel(rounded) == [false])
        #expect(store.statistics.revalidations == 0, "from memory")
        store.clearMemory()
        #expect(try await stale.loadAndCancel(rounded) == [false])
        #expect(store.statistics.revalidations == 0, "from disk")
        #expect(try await stale.server.statuses(for: StaleImage.path) == [200])

        _ = try await store.image(for: rounded)
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        let statuses = try await stale.server.statuses(for: StaleImage.path)
        #expect(statuses == [200, 304], "the load that shows the image revalidates it")
    }

    /// A run whose loads all left while it was on its way (its task waiting for a thread, or between two
    /// steps) shows nothing either: bytes it then finds in memory ask the server nothing. Here the run is
    /// held by a test hook between its fetch-slot wait and its lookup of the bytes while its load is
    /// cancelled. (Before, the stale bytes found in memory sent a revalidation for an image nobody waited for.)
    @MainActor
    @Test func aRunWhoseLoadsLeftBeforeItLookedUpItsBytesDoesNotRevalidateThem() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 100, height: 75)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let gate = SuspendingGate()
        defer { gate.open() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.fetchSlotObserver = { _, _ in await gate.parkIfArmed() }
        }
        let url = server.url(StaleImage.path)
        _ = try await store.image(for: ImageRequest(url: url))
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        #expect(store.statistics.revalidations == 0)

        // Other corners than the decode in memory: the run decodes again from the bytes kept in memory.
        gate.arm()
        let rounded = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 50, cornerRadius: 10)) }
        try await waitUntil { gate.parkedCount == 1 }
        rounded.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await rounded.value }
        gate.open()
        try await waitUntil { store.variantRuns.count == 0 && store.fetchRuns.count == 0 }
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        #expect(store.statistics.revalidations == 0)
        let statuses = try await server.statuses(for: StaleImage.path)
        #expect(statuses == [200], "the server was asked for an image nobody waited for: \(statuses)")
    }

    /// A 100x75 JPEG served `no-cache` (stale at once), loaded once at its natural width by ``store``.
    @MainActor
    struct StaleImage {
        static let path = "/cache/no-cache/images/0.jpg"
        let folder = TemporaryDirectory("images")
        let server: TestHTTPServer
        let store: ImageStore
        var url: URL { server.url(Self.path) }

        init() async throws {
            try SampleImages.writeJPEGs([PixelSize(width: 100, height: 75)], into: folder.url)
            server = try await TestHTTPServer(serving: folder.url)
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
            _ = try await store.image(for: ImageRequest(url: server.url(Self.path)))
            try await waitUntil { [store] in store.revalidating.withLock { $0.isEmpty } }
            #expect(try await server.statuses(for: Self.path) == [200])
        }

        /// Starts a load of `request` and cancels it in the same turn of the main actor; returns what its
        /// completion was called with (`true` for an image), once it was called and no revalidation runs.
        func loadAndCancel(_ request: ImageRequest) async throws -> [Bool] {
            let calls = LockedBox([Bool]())
            let task = store.load(request) { image in calls.withLock { $0.append(image != nil) } }
            task.cancel()
            try await waitUntil { !calls.withLock { $0 }.isEmpty }
            try await waitUntil { [store] in store.revalidating.withLock { $0.isEmpty } }
            return calls.withLock { $0 }
        }
    }
}

extension ImageStoreCoalescingTests {
    /// A wider load that replaces one whose bytes wait for a decode slot (as `CachedImageModel` replaces
    /// its load when the frame grows) takes those bytes: there is no fetch run left to share, and the
    /// replaced load's cleanup, racing the new load's lookup, must not send it to the server again.
    @MainActor
    @Test func aWiderLoadReplacingOneThatWaitsForADecodeSlotTakesItsBytes() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs(
            [PixelSize(width: 300, height: 200), PixelSize(width: 300, height: 200)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let gate = GatedDecoder()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
            $0.decodeConcurrency = 1
        }
        // The one decode slot is held by another image.
        let busy = Task { try await store.image(for: ImageRequest(url: server.url("/images/1.jpg"))) }
        try await waitUntil { gate.enteredCount == 1 }
        let url = server.url("/images/0.jpg")
        let first = store.load(ImageRequest(url: url, targetWidth: 100)) { _ in }
        try await waitUntil { store.decodingOriginals.withLock { $0[url.cacheKey] != nil } }
        let widths = LockedBox([Int?]())
        _ = store.load(ImageRequest(url: url, targetWidth: 200), replacing: first) { image in
            widths.withLock { $0.append(image?.pixelSize.width) }
        }
        gate.open()
        _ = try await busy.value
        try await waitUntil { !widths.withLock { $0 }.isEmpty }
        #expect(widths.withLock { $0 } == [200])
        #expect(try await server.hits(for: "/images/0.jpg") == 1, "the replaced load's bytes were fetched again")
    }
}

/// Polls `condition` 6000 times, 10 ms apart, and fails the test if it never holds: 60 s at least, and
/// longer where the machine is loaded, a sanitizer build is slow, or each poll takes time of its own
/// (one that asks the test server, several milliseconds). Counted in polls, not by the clock, so that
/// a loaded machine gets more time, not fewer looks; a test that waits on the server therefore fails
/// after more than a minute, which a suite's time limit may cut short first.
func waitUntil(
    _ condition: @Sendable () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    for _ in 0..<6000 {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("condition never held", sourceLocation: sourceLocation)
}

extension ImageStoreCoalescingTests {
    /// Loads of one image whose URLs differ only in the scheme's case (`HTTP://` and `http://`, one cache
    /// key) share the download and, at the same width, the decode; each load's error names its own URL as
    /// it was written, not the one the load that started the shared work wrote.
    @Test func loadsSharingWorkUnderTwoSpellingsOfAURLEachGetAnErrorNamingTheirOwn() async throws {
        let folder = TemporaryDirectory("images")
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        // Held until every load waits for it, however loaded the machine.
        let path = "/held/spellings/status/404"
        let lower = server.url(path)
        let upper = try #require(URL(string: "HTTP" + lower.absoluteString.dropFirst("http".count)))
        let first = Task { try await store.image(for: ImageRequest(url: lower, targetWidth: 100)) }
        try await waitUntil { try await server.hits(for: path) == 1 }
        let sameWidth = ImageRequest(url: upper, targetWidth: 100)
        let otherWidth = ImageRequest(url: upper, targetWidth: 200)
        let joiners = [sameWidth, otherWidth].map { request in Task { try await store.image(for: request) } }
        try await waitUntil {
            store.variantRuns.waiterCount(for: sameWidth) == 2 && store.fetchRuns.waiterCount(for: lower.cacheKey) == 2
        }
        try await server.release("spellings")
        await #expect(throws: ImageLoadingError.httpStatus(code: 404, url: lower)) { try await first.value }
        for joiner in joiners {
            await #expect(throws: ImageLoadingError.httpStatus(code: 404, url: upper)) { try await joiner.value }
        }
        #expect(try await server.hits(for: path) == 1)
    }
}
