import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import AsyncImageCache

/// Fetch slots: a burst of visible loads fetches only a few images of each source ahead of the decodes,
/// and a source that does not answer holds up only its own loads.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreFetchSlotTests {
    @Test func hundredsOfPrefetchesFetchOnlyAFewImagesAheadOfTheDecodes() async throws {
        // A long list prefetched at once, decodes slower than reads: the bytes of every image must not
        // pile up in memory waiting for a decode slot.
        let slot = try OneGatedSlot(count: 200)
        let (requests, gate, log, store) = (slot.requests, slot.gate, slot.log, slot.store)
        store.startPrefetching(requests)
        try await waitUntil { gate.enteredCount == 1 }
        try await Task.sleep(for: .milliseconds(500))  // time for more reads, were they to start
        let fetched = log.urls(of: .fetch).count
        let waiting = store.decodingOriginals.withLock { $0.count }
        #expect(fetched <= store.prefetchConcurrency, "\(fetched) of 200 prefetched files read with one decode running")
        #expect(waiting <= store.prefetchConcurrency, "\(waiting) images' bytes held waiting for a decode slot")
        gate.open()
        // Every prefetch still runs once the first ones end.
        try await waitUntil { log.urls(of: .decode).count == requests.count }
        #expect(Set(log.urls(of: .decode)) == Set(requests.map(\.url)))
        try await waitUntil { store.prefetches.withLock { $0.running.isEmpty } }
    }

    /// `count` small JPEGs behind a server on 127.0.0.1, a visible load of each started at once, and a
    /// store with one decode slot whose decoder waits at a gate, with a log of the stages.
    struct BurstBehindOneGatedSlot {
        let folder = TemporaryDirectory("burst")
        let server: TestHTTPServer
        let gate = GatedDecoder()
        let log = StageLog()
        let store: ImageStore
        let urls: [URL]
        let loads: [Task<PlatformImage, any Error>]

        init(count: Int) async throws {
            let names = try SampleImages.writeJPEGs(
                Array(repeating: PixelSize(width: 200, height: 100), count: count), into: folder.url)
            server = try await TestHTTPServer(serving: folder.url)
            let (gate, log) = (gate, log)
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decoder = gate
                $0.decodeConcurrency = 1
                $0.stageObserver = log.observer
            }
            let store = store
            urls = names.map { [server] in server.url("/images/\($0)") }
            loads = urls.map { url in Task { try await store.image(for: ImageRequest(url: url, targetWidth: 50)) } }
        }

        /// Waits until one decode is held at the gate and the loads fetched ahead of it wait for the slot.
        func waitForTheLoadsAhead() async throws {
            let (gate, store) = (gate, store)
            try await waitUntil { gate.enteredCount == 1 && store.decodeSlots.waitingCount >= store.fetchSlots.limit }
            try await Task.sleep(for: .milliseconds(500))  // time for more fetches, were they to start
        }
    }

    @Test func aBurstOfVisibleLoadsFetchesOnlyAFewImagesAheadOfTheDecodes() async throws {
        // Hundreds of rows on screen at once, each waiting for its image, downloads faster than decodes:
        // the bytes of every image must not pile up in memory waiting for a decode slot (before: all 60
        // fetched and held, 59 of them waiting).
        let burst = try await BurstBehindOneGatedSlot(count: 60)
        let (store, log) = (burst.store, burst.log)
        try await burst.waitForTheLoadsAhead()
        let ahead = store.fetchSlots.limit
        let fetched = log.urls(of: .fetch).count
        let held = store.decodingOriginals.withLock { $0.count }
        #expect(fetched == ahead + 1, "\(fetched) of 60 images fetched with one decode running")
        #expect(held == ahead + 1, "\(held) images' bytes held, one decoding and the rest waiting for its slot")
        #expect(store.decodeSlots.waitingCount == ahead)
        burst.gate.open()
        // Every load still ends with its image, each fetched once.
        for load in burst.loads { _ = try await load.value }
        let hits = try await burst.server.hits()
        #expect(hits.count == 60 && hits.values.allSatisfy { $0 == 1 }, "\(hits)")
        #expect(store.fetchSlots.busyCount == 0)
    }

    @Test func aVisibleLoadOfBytesInMemoryDoesNotWaitBehindTheFetchesAhead() async throws {
        // Another width of an image whose bytes wait for the decode slot fetches nothing: it queues for
        // the slot at once, not behind the loads waiting to fetch.
        let burst = try await BurstBehindOneGatedSlot(count: 30)
        let store = burst.store
        try await burst.waitForTheLoadsAhead()
        let ahead = store.fetchSlots.limit
        let fetched = burst.log.urls(of: .fetch)[1]
        let wider = Task { try await store.image(for: ImageRequest(url: fetched, targetWidth: 100)) }
        try await waitUntil { store.decodeSlots.waitingCount == ahead + 1 }
        #expect(store.fetchSlots.busyCount == ahead)
        burst.gate.open()
        #expect(try await wider.value.pixelSize == PixelSize(width: 100, height: 50))
        for load in burst.loads { _ = try await load.value }
        #expect(try await burst.server.hits().values.reduce(0, +) == 30)
    }

    @Test func aVisibleLoadDoesNotWaitToFetchBehindRunsOnlyPrefetchesStillWant() async throws {
        // Rows scrolled away while their images are prefetched too: their runs, prefetches now, hold
        // fetched bytes and wait for the decode slot behind visible loads. They give back the host's
        // fetch slots, so the next visible row fetches and decodes before them (before: it could not
        // fetch until a prefetch's decode gave a slot back).
        let burst = try await BurstBehindOneGatedSlot(count: 9)
        let (store, log) = (burst.store, burst.log)
        try await burst.waitForTheLoadsAhead()
        let ahead = store.fetchSlots.limit
        let decoding = log.urls(of: .decode)[0]
        let scrolledAway = zip(burst.urls, burst.loads).filter { $0.0 != decoding }
        let requests = scrolledAway.map { ImageRequest(url: $0.0, targetWidth: 50) }
        #expect(requests.count == ahead && store.fetchSlots.busyCount == ahead)
        store.startPrefetching(requests)
        try await waitUntil { requests.allSatisfy { store.variantRuns.waiterCount(for: $0) == 2 } }
        for (_, load) in scrolledAway { load.cancel() }
        let next = burst.server.url("/alias/1/images/0.jpg")
        let visible = Task { try await store.image(for: ImageRequest(url: next, targetWidth: 50)) }
        // Fetched, it waits for the decode slot with the prefetches' runs.
        try await waitUntil { store.decodeSlots.waitingCount == ahead + 1 }
        burst.gate.open()
        #expect(try await visible.value.pixelSize == PixelSize(width: 50, height: 25))
        #expect(Array(log.urls(of: .decode).prefix(2)) == [decoding, next])
        try await waitUntil { store.prefetches.withLock { $0.running.isEmpty } && store.variantRuns.count == 0 }
        #expect(store.fetchSlots.busyCount == 0 && store.fetchSlots.sourceCount == 0)
    }

    /// A row waiting to fetch (its host's slots all held by loads ahead) that is prefetched too and then
    /// scrolls away: only the prefetch wants its run now, and prefetches take no slot, so it fetches at
    /// once. Before, it kept waiting in the visible queue, behind every visible load of the host, for a
    /// slot it would give back as it got it: here, until the decode ahead ended.
    @Test func aRunWaitingToFetchThatOnlyAPrefetchWantsAnyMoreFetchesWithoutASlot() async throws {
        let burst = try await BurstBehindOneGatedSlot(count: ImageStore.loadsAhead(ofDecodeSlots: 1) + 2)
        let (store, log) = (burst.store, burst.log)
        try await burst.waitForTheLoadsAhead()
        let started = Set(log.urls(of: .fetch))
        let waiting = zip(burst.urls, burst.loads).filter { !started.contains($0.0) }
        try #require(waiting.count == 1)
        let (url, load) = waiting[0]
        #expect(store.fetchSlots.waitingCount == 1)
        let request = ImageRequest(url: url, targetWidth: 50)
        store.startPrefetching([request])
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 2 }
        load.cancel()
        // The decode ahead still held at its gate: fetched without a slot.
        try await waitUntil { log.urls(of: .fetch).contains(url) }
        #expect(burst.gate.enteredCount == 1)
        #expect(store.fetchSlots.waitingCount == 0)
        burst.gate.open()
        try await waitUntil { store.cachedImage(for: request) != nil }
        #expect(try await burst.server.hits(for: url.path) == 1)
    }

    @Test func visibleLoadsCancelledWhileWaitingToFetchNeverFetch() async throws {
        // A fast scroll: rows appear faster than their images decode, then most go away. Those not yet
        // fetching ask the server nothing and hold no bytes (before: all 30 fetched).
        let burst = try await BurstBehindOneGatedSlot(count: 30)
        let store = burst.store
        try await burst.waitForTheLoadsAhead()
        let started = Set(burst.log.urls(of: .fetch))
        #expect(started.count == store.fetchSlots.limit + 1)
        let loads = zip(burst.urls, burst.loads)
        for (url, load) in loads where !started.contains(url) { load.cancel() }
        burst.gate.open()
        for (url, load) in loads {
            if started.contains(url) {
                _ = try await load.value
            } else {
                await #expect(throws: ImageLoadingError.cancelled) { try await load.value }
            }
        }
        #expect(try await burst.server.hits().values.reduce(0, +) == started.count)
        #expect(store.decodingOriginals.withLock { $0.isEmpty })
        #expect(store.fetchSlots.busyCount == 0 && store.fetchSlots.waitingCount == 0)
    }

    @Test func aHostThatDoesNotAnswerHoldsUpOnlyItsOwnLoads() async throws {
        // Rows of a host that sends nothing (until its timeout) take that host's slots for fetching ahead;
        // the rows of another host and of local files still load meanwhile. Before the slots were per
        // source, they waited for the stalled host's loads to end.
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 200, height: 100), count: 3), into: folder.url)
        let stalled = try await TestHTTPServer(serving: folder.url)
        let other = try await TestHTTPServer(serving: folder.url)
        defer {
            stalled.stop()
            other.stop()
        }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 1
            // The stalled rows stall for as long as the test takes, however loaded the machine (under
            // ThreadSanitizer, with the whole suite running, this test once took 283 s): they end when
            // the test cancels them, never by the request's timeout.
            $0.dataLoader = DataLoader(timeout: 600)
        }
        let hung = try await Self.stallTwentyLoads(of: stalled, image: names[0], in: store)
        defer { hung.forEach { $0.cancel() } }

        let fromOtherHost = Task { try await store.image(for: ImageRequest(url: other.url("/images/\(names[1])"))) }
        let fromFile = Task {
            try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(names[2])))
        }
        try await waitUntil { store.statistics.decodes == 2 }
        #expect(try await fromOtherHost.value.pixelSize == PixelSize(width: 200, height: 100))
        #expect(try await fromFile.value.pixelSize == PixelSize(width: 200, height: 100))
        #expect(store.fetchSlots.sourceCount == 1, "the sets of the sources whose loads ended are gone")
        hung.forEach { $0.cancel() }
        for load in hung { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil { store.fetchSlots.sourceCount == 0 }
    }

    @Test func aVisibleLoadOfBytesOnDiskDoesNotWaitBehindItsHostsLoadsThatDoNotAnswer() async throws {
        // A host that stops answering (a server hung, a network that drops packets) while its rows that
        // were never loaded take its slots for fetching ahead: the rows of its images already on disk,
        // which ask it nothing, still load. Before, they waited for a slot of the host behind the stalled
        // loads, until these ended at the request's timeout (60 s by default).
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 1
            $0.dataLoader = DataLoader(timeout: 600)  // the stalled rows end when the test cancels them
        }
        let cached = server.url("/images/\(names[0])")
        _ = try await store.image(for: ImageRequest(url: cached, targetWidth: 50))
        await onOwnThread { store.waitForDiskMaintenance() }
        store.clearMemory()  // as after a relaunch: on disk only
        try await Self.expectReadFromTheDiskTierPastStalledLoads(cached, image: names[0], of: server, in: store)
    }

    @Test func aVisibleLoadOfBytesWaitingForTheDiskDoesNotWaitBehindItsHostsLoadsThatDoNotAnswer() async throws {
        // As above, with the image's write still waiting for the disk when memory lets it go (a
        // `clearMemory()` while the folder's writes queue behind a trim or larger files): the load reads the
        // queued bytes and asks the host nothing, so it takes a slot of the disk tier's, not of the host's.
        // Before, it waited for one of the host's behind the stalled loads, for their timeout.
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let attributes = PixelSizeWriteGate()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 1
            $0.dataLoader = DataLoader(timeout: 600)  // the stalled rows end when the test cancels them
            $0.extendedAttributes = attributes
        }
        let cached = server.url("/images/\(names[0])")
        attributes.gate.arm()  // the image's write waits before its file is in place
        defer { attributes.gate.open() }  // once more when the test ends early
        _ = try await store.image(for: ImageRequest(url: cached, targetWidth: 50))
        try await waitUntil { attributes.gate.parkedCount == 1 }
        store.clearMemory()  // the bytes are in the disk tier's queue only
        #expect(!FileManager.default.fileExists(atPath: store.disk.filePath(for: cached)))
        try await Self.expectReadFromTheDiskTierPastStalledLoads(cached, image: names[0], of: server, in: store)
    }

    @Test func aVisibleLoadOfBytesOnDiskDoesNotWaitBehindLoadsOfFilesTooLargeForALoweredBudget() async throws {
        // The app relaunched with a lower `diskByteLimit`: files larger than it stay until the first trim
        // (``DiskStore/relistingInterval`` after the store opens), and are never read meanwhile, so their loads
        // ask their host. Of a host that stops answering, they hold its slots, not the disk tier's: an image
        // within the budget still loads from disk. Before, `DiskStore.contains` took such a file for stored,
        // so those loads held the disk tier's slots while they waited for the host, and the disk's loads
        // waited behind them until they ended.
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let root = folder.url.appendingPathComponent("cache")
        let before = try ImageStore.makeForTesting(root: root)
        let cached = server.url("/images/\(names[0])")
        _ = try await before.image(for: ImageRequest(url: cached, targetWidth: 50))
        let tooLarge = Data(repeating: 0xA5, count: 64 << 10)
        for index in 0..<20 {
            // The URLs ``stallTwentyLoads(of:image:in:)`` loads, stored when the budget was larger.
            let url = server.url("/held/never/alias/\(index)/images/\(names[0])")
            try before.disk.store(tooLarge, pixelSize: PixelSize(width: 200, height: 100), for: url)
        }
        await onOwnThread { before.waitForDiskMaintenance() }
        let store = try ImageStore.makeForTesting(root: root) {
            $0.decodeConcurrency = 1
            $0.dataLoader = DataLoader(timeout: 600)  // the stalled rows end when the test cancels them
            $0.diskByteLimit = 32 << 10
        }
        #expect(store.disk.data(for: cached) != nil)
        #expect(store.disk.data(for: server.url("/held/never/alias/0/images/\(names[0])")) == nil)
        try await Self.expectReadFromTheDiskTierPastStalledLoads(cached, image: names[0], of: server, in: store)
    }

    @Test func aCustomSchemeThatDoesNotAnswerHoldsUpOnlyItsOwnLoads() async throws {
        // A custom loader's rows that never answer take their source's slots for fetching ahead; local
        // files and data: URLs still load meanwhile. Before, every URL that was not HTTP shared one set of
        // slots, and the file and the data: URL waited for the stalled loads to end.
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let file = folder.url.appendingPathComponent(names[0])
        let dataURL = try #require(
            URL(string: "data:image/jpeg;base64," + Data(contentsOf: file).base64EncodedString()))
        let (store, loader, hung) = try StalledSchemeLoader.startLoads(in: folder) { "stalled://photos/\($0).jpg" }
        defer { hung.forEach { $0.cancel() } }
        let ahead = store.fetchSlots.limit
        try await waitUntil { loader.stalledCount == ahead && store.fetchSlots.waitingCount == 20 - ahead }

        let fromFile = Task { try await store.image(for: ImageRequest(url: file)) }
        let fromData = Task { try await store.image(for: ImageRequest(url: dataURL, targetWidth: 100)) }
        try await waitUntil { store.statistics.decodes == 2 }
        #expect(loader.stalledCount == ahead && store.fetchSlots.waitingCount == 20 - ahead, "still stalled")
        // Cancelled before the two are awaited, so that a file stuck behind them fails the test, not hangs it.
        hung.forEach { $0.cancel() }
        #expect(try await fromFile.value.pixelSize == PixelSize(width: 200, height: 100))
        #expect(try await fromData.value.pixelSize == PixelSize(width: 100, height: 50))
        for load in hung { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil { store.fetchSlots.sourceCount == 0 }
    }

    @Test func aBurstOfACustomSchemeWhoseHostNamesEachImageFetchesOnlyAFewImagesAhead() async throws {
        // A custom scheme whose host part names the item, not a server (`ph://<asset id>`, `ipfs://<cid>`):
        // a burst of its rows fetches as few images ahead of the decodes as a burst of one host's. Before,
        // each URL's host had a set of slots of its own, and all 20 were fetched at once.
        let folder = TemporaryDirectory("images")
        let (store, loader, hung) = try StalledSchemeLoader.startLoads(in: folder) { "stalled://asset-\($0)/" }
        defer { hung.forEach { $0.cancel() } }
        try await waitUntil { loader.stalledCount + store.fetchSlots.waitingCount == 20 }
        let ahead = store.fetchSlots.limit
        #expect(loader.stalledCount == ahead, "\(loader.stalledCount) of 20 images fetched at once")
        hung.forEach { $0.cancel() }
        for load in hung { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil { store.fetchSlots.sourceCount == 0 }
    }

    @Test(arguments: [false, true])
    func aVisibleLoadWaitingToFetchBytesAnotherWidthFetchesMeanwhileDecodesThemAsTheyArrive(
        byPrefetch: Bool
    ) async throws {
        // Two widths of one image (the other one visible, or prefetched) while the host's other rows
        // stall: this width waits to fetch, the other width's bytes arrive, and it decodes them then,
        // instead of waiting for a slot the stalled rows hold until their timeout (before: it waited).
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 200, height: 100), count: 2), into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 1
            $0.dataLoader = DataLoader(timeout: 600)  // the stalled rows end when the test cancels them
        }
        let path = "/held/first/images/\(names[0])"
        let url = server.url(path)
        var first: Task<PlatformImage, any Error>?
        if byPrefetch {
            store.startPrefetching([ImageRequest(url: url, targetWidth: 100)])
        } else {
            first = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 100)) }
        }
        let used = byPrefetch ? 0 : 1  // a prefetch takes no fetch slot
        try await waitUntil { store.fetchRuns.count == 1 && store.fetchSlots.busyCount == used }
        let ahead = store.fetchSlots.limit
        let hung = (0...ahead).map { index in
            let stalled = server.url("/held/never/alias/\(index)/images/\(names[1])")
            return Task { try await store.image(for: ImageRequest(url: stalled, targetWidth: 50)) }
        }
        defer { hung.forEach { $0.cancel() } }
        try await waitUntil { store.fetchSlots.busyCount == ahead && store.fetchSlots.waitingCount == 1 + used }
        let narrow = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 50)) }
        // In: waiting for the download it joined at once, taking no slot (before: for a slot).
        try await waitUntil { store.fetchRuns.waiterCount(for: url.cacheKey) == 2 }
        #expect(store.fetchSlots.waitingCount == 1 + used)
        try await server.release("first")
        if let first { #expect(try await first.value.pixelSize == PixelSize(width: 100, height: 50)) }
        try await waitUntil { store.statistics.decodes == 2 }
        #expect(store.statistics.failures == 0)
        hung.forEach { $0.cancel() }
        #expect(try await narrow.value.pixelSize == PixelSize(width: 50, height: 25))
        #expect(try await server.hits(for: path) == 1)
        for load in hung { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil { store.fetchSlots.sourceCount == 0 }
    }

    /// With twenty loads of `server` stalled (``stallTwentyLoads(of:image:in:)``), a load of `cached` (200x100,
    /// its bytes in the disk tier) is read from there, one disk hit, while they still wait, and is delivered
    /// at 100 wide; `server` is never asked for it again.
    static func expectReadFromTheDiskTierPastStalledLoads(
        _ cached: URL, image: String, of server: TestHTTPServer, in store: ImageStore
    ) async throws {
        let hung = try await stallTwentyLoads(of: server, image: image, in: store)
        defer { hung.forEach { $0.cancel() } }

        let fromDisk = Task { try await store.image(for: ImageRequest(url: cached, targetWidth: 100)) }
        try await waitUntil { store.statistics.diskHits == 1 }
        #expect(store.fetchSlots.waitingCount == 20 - store.fetchSlots.limit, "still stalled")
        // Cancelled before the load is awaited, so that a load stuck behind them fails the test, not hangs it.
        hung.forEach { $0.cancel() }
        #expect(try await fromDisk.value.pixelSize == PixelSize(width: 100, height: 50))
        for load in hung { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil { store.fetchSlots.sourceCount == 0 }
        #expect(try await server.hits()["/images/\(image)"] == 1)
    }

    /// Twenty loads of `image` under distinct URLs that `server` never answers, started in `store` once
    /// they hold every fetch slot of the host and the others wait for one.
    static func stallTwentyLoads(
        of server: TestHTTPServer, image: String, in store: ImageStore
    ) async throws -> [Task<PlatformImage, any Error>] {
        let hung = (0..<20).map { index in
            Task {
                try await store.image(
                    for: ImageRequest(url: server.url("/held/never/alias/\(index)/images/\(image)"), targetWidth: 50))
            }
        }
        let ahead = store.fetchSlots.limit
        try await waitUntil { store.fetchSlots.busyCount == ahead && store.fetchSlots.waitingCount == 20 - ahead }
        return hung
    }

    @Test func aLoadThatCountedOnADownloadCancelledBeforeItJoinedFetchesUnderASlot() async throws {
        // A row of another width counts on the download of a row being fetched (it joins it, holding no slot
        // of its own), but that row scrolls away and its download is cancelled before the other row has
        // joined it (held there by a test hook), while the host's other rows hold every other slot and a new
        // row takes the slot let go. The other row fetches the image itself: it waits for a slot like any
        // load. Before, it fetched without one, and the host had one download more in flight than its slots.
        let counted = try await CountedOnDownload()
        defer { counted.stop() }
        let (store, server, loader, ahead) = (counted.store, counted.server, counted.loader, counted.ahead)
        try await waitUntil { loader.http.unfinishedTaskCount == ahead - 1 }
        let newRow = Task { try await store.image(for: counted.request("/held/new/images/", width: 50)) }
        try await waitUntil { loader.http.unfinishedTaskCount == ahead && store.fetchSlots.busyCount == ahead }
        counted.gate.open()
        try await waitUntil { loader.http.unfinishedTaskCount > ahead || store.fetchSlots.waitingCount == 1 }
        #expect(
            loader.http.unfinishedTaskCount <= ahead,
            "\(loader.http.unfinishedTaskCount) downloads of one host in flight, \(ahead) slots")
        #expect(store.fetchSlots.waitingCount == 1)
        for key in ["first", "others", "new"] { try await server.release(key) }
        #expect(try await counted.wider.value.pixelSize == PixelSize(width: 100, height: 50))
        _ = try await newRow.value
        try await counted.finishOthers()
    }

    @Test func aSlotTakenForADownloadCountedOnGoesBackOnceOnlyAPrefetchWantsIt() async throws {
        // As in the test above, the wider row fetches the image itself, under the slot the first row let go.
        // Then it scrolls away too, its run kept by a prefetch of the same request: the slot goes back, as a
        // visible run's own slot does once only prefetches want it, and the host's next visible row fetches at
        // once. Before, the download kept the slot until it ended, and that row waited behind a prefetch.
        let counted = try await CountedOnDownload()
        defer { counted.stop() }
        let (store, server, loader, ahead) = (counted.store, counted.server, counted.loader, counted.ahead)
        counted.gate.open()
        // The wider row's own download, under the slot let go.
        try await waitUntil { loader.http.unfinishedTaskCount == ahead && store.fetchSlots.busyCount == ahead }

        try await counted.leaveWiderToAPrefetch()
        try await waitUntil { store.fetchSlots.busyCount == ahead - 1 }
        #expect(store.fetchSlots.busyCount == ahead - 1, "the download kept its slot for a prefetch")
        #expect(loader.http.unfinishedTaskCount == ahead, "the prefetch's download goes on")
        let newRow = Task { try await store.image(for: counted.request("/held/new/images/", width: 50)) }
        try await waitUntil { loader.http.unfinishedTaskCount == ahead + 1 }
        #expect(store.fetchSlots.waitingCount == 0)
        for key in ["first", "others", "new"] { try await server.release(key) }
        _ = try await newRow.value
        try await counted.finishOthers()
        try await waitUntil { store.cachedImage(for: counted.widerRequest) != nil }
    }

    @Test func aDownloadCountedOnWaitsForItsSlotWhileAnyVisibleRowWaitsForIt() async throws {
        // The wider row (as above) waits for a slot for the download it starts, every slot busy; a third
        // width's row joins that download, then the wider row scrolls away, its run kept by a prefetch. The
        // download still has a visible row waiting: it keeps waiting for a slot. Before, its wait went by the
        // wider row's priority alone, ended as that row turned into a prefetch, and the download went out
        // under no slot, one more than the host's bound.
        let counted = try await CountedOnDownload()
        defer { counted.stop() }
        let (store, server, loader, ahead) = (counted.store, counted.server, counted.loader, counted.ahead)
        // The slot let go goes to another row before the wider one looks for one.
        let another = Task { try await store.image(for: counted.request("/held/another/images/", width: 50)) }
        try await waitUntil { loader.http.unfinishedTaskCount == ahead && store.fetchSlots.busyCount == ahead }
        counted.gate.open()
        try await waitUntil { store.fetchSlots.waitingCount == 1 && store.fetchRuns.count == ahead + 1 }
        let third = Task { try await store.image(for: ImageRequest(url: counted.url, targetWidth: 75)) }
        try await waitUntil { store.fetchRuns.waiterCount(for: counted.url.cacheKey) == 2 }

        try await counted.leaveWiderToAPrefetch()
        #expect(store.fetchSlots.waitingCount == 1, "the third row's download stopped waiting for a slot")
        #expect(loader.http.unfinishedTaskCount == ahead)
        try await server.release("another")
        _ = try await another.value
        try await waitUntil { loader.http.unfinishedTaskCount == ahead && store.fetchSlots.waitingCount == 0 }
        #expect(store.fetchSlots.busyCount == ahead, "the download went out under the slot let go")
        for key in ["first", "others"] { try await server.release(key) }
        #expect(try await third.value.pixelSize == PixelSize(width: 75, height: 38))
        try await counted.finishOthers()
    }

    /// A row of another width (100 px) that counts on the download of a first row (50 px) being fetched,
    /// held by a test hook before it joins it, while the host's other rows hold every other slot; the first
    /// row has scrolled away, its download cancelled, and the slot it held is free. Every response is held by
    /// the server: the first row's URL under `first`, the others' under `others`.
    struct CountedOnDownload {
        let folder = TemporaryDirectory("images")
        let server: TestHTTPServer
        let loader: DataLoader
        let gate = SuspendingGate()
        let store: ImageStore
        let image: String
        let ahead: Int
        let url: URL
        let others: [Task<PlatformImage, any Error>]
        let wider: Task<PlatformImage, any Error>
        var widerRequest: ImageRequest { ImageRequest(url: url, targetWidth: 100) }

        init() async throws {
            image = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)[0]
            server = try await TestHTTPServer(serving: folder.url)
            let sessionConfiguration = URLSessionConfiguration.ephemeral
            sessionConfiguration.httpMaximumConnectionsPerHost = 16
            let loader = DataLoader(timeout: 600, sessionConfiguration: sessionConfiguration)
            self.loader = loader
            let gate = gate
            let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decodeConcurrency = 1
                $0.dataLoader = loader
                $0.fetchSlotObserver = { _, holdsSlot in if !holdsSlot { await gate.parkIfArmed() } }
            }
            self.store = store
            ahead = store.fetchSlots.limit
            url = server.url("/held/first/images/\(image)")
            let first = Task { [url] in try await store.image(for: ImageRequest(url: url, targetWidth: 50)) }
            try await waitUntil { loader.http.unfinishedTaskCount == 1 }
            let (server, image, ahead) = (server, image, ahead)
            others = (1..<ahead).map { index in
                Task {
                    try await store.image(
                        for: ImageRequest(
                            url: server.url("/held/others/alias/\(index)/images/\(image)"), targetWidth: 50))
                }
            }
            try await waitUntil { loader.http.unfinishedTaskCount == ahead && store.fetchSlots.busyCount == ahead }
            gate.arm()
            let request = ImageRequest(url: url, targetWidth: 100)
            wider = Task { try await store.image(for: request) }
            try await waitUntil { gate.parkedCount == 1 }  // counts on the first row's download
            first.cancel()
            await #expect(throws: ImageLoadingError.cancelled) { try await first.value }
            try await waitUntil { store.fetchRuns.count == ahead - 1 && store.fetchSlots.busyCount == ahead - 1 }
        }

        /// A request of the image at another path of the server (`/held/<key>/images/`), `width` wide.
        func request(_ path: String, width: CGFloat) -> ImageRequest {
            ImageRequest(url: server.url(path + image), targetWidth: width)
        }

        /// Starts a prefetch of the wider row's request, which joins its run, then cancels the wider row.
        func leaveWiderToAPrefetch() async throws {
            store.startPrefetching([widerRequest])
            try await waitUntil { store.variantRuns.waiterCount(for: widerRequest) == 2 }
            wider.cancel()
            await #expect(throws: ImageLoadingError.cancelled) { try await wider.value }
        }

        /// Waits for the other rows' loads, once their responses are released.
        func finishOthers() async throws {
            for load in others { _ = try await load.value }
        }

        func stop() {
            gate.open()
            server.stop()
        }
    }
}

/// A custom source's loader: `stalled:` URLs, and those of any scheme that starts so (`stalled1:`), never
/// answer until their load is cancelled (a source as slow as a host that sends nothing); every other URL
/// goes to the package's own loader.
final class StalledSchemeLoader: DataLoading {
    private let base = DataLoader()
    private let stalled = LockedBox(0)

    /// The `stalled:` loads started so far.
    var stalledCount: Int { stalled.withLock { $0 } }

    /// A store of `folder` with such a loader, and 20 visible loads, 50 wide, of the URLs `url` makes of
    /// 0 to 19, started.
    static func startLoads(
        in folder: TemporaryDirectory, _ url: (Int) -> String
    ) throws -> (ImageStore, StalledSchemeLoader, [Task<PlatformImage, any Error>]) {
        let loader = StalledSchemeLoader()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        let loads = (0..<20).map { index in
            let request = ImageRequest(url: URL(string: url(index))!, targetWidth: 50)
            return Task { try await store.image(for: request) }
        }
        return (store, loader, loads)
    }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        guard url.scheme?.hasPrefix("stalled") == true else { return try await base.loadData(for: url) }
        stalled.withLock { $0 += 1 }
        try? await Task.sleep(for: .seconds(600))
        throw .cancelled
    }
}
