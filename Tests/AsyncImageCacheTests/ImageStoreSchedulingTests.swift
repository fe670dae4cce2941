import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import AsyncImageCache

/// Bounded decode concurrency, priority for visible loads over prefetches, and cancellation that
/// keeps a fast fling from queueing decodes.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreSchedulingTests {
    @Test func decodesNeverRunMoreAtOnceThanTheConcurrencyLimit() async throws {
        let folder = TemporaryDirectory("slots")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 400, height: 300), count: 24), into: folder.url)
        let decoder = GatedDecoder(open: true)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = decoder
            $0.decodeConcurrency = 2
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in names {
                group.addTask {
                    _ = try await store.image(
                        for: ImageRequest(url: folder.url.appendingPathComponent(name), targetWidth: 64))
                }
            }
            try await group.waitForAll()
        }
        #expect(decoder.enteredCount == names.count)
        #expect(decoder.peakConcurrency <= 2)
        #expect(decoder.peakConcurrency >= 1)
    }

    /// `count` small JPEGs, a request for each, and a store with one decode slot whose decoder
    /// waits at a gate, with a log of the stages.
    struct OneGatedSlot {
        let folder = TemporaryDirectory("slots")
        let requests: [ImageRequest]
        let gate: GatedDecoder
        let log: StageLog
        let store: ImageStore

        init(count: Int) throws {
            let names = try SampleImages.writeJPEGs(
                Array(repeating: PixelSize(width: 200, height: 100), count: count), into: folder.url)
            requests = names.map { [folder] in ImageRequest(url: folder.url.appendingPathComponent($0), targetWidth: 50)
            }
            let (gate, log) = (GatedDecoder(), StageLog())
            (self.gate, self.log) = (gate, log)
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decoder = gate
                $0.decodeConcurrency = 1
                $0.stageObserver = log.observer
            }
        }
    }

    @Test func aVisibleLoadGetsTheNextDecodeSlotBeforeQueuedPrefetches() async throws {
        let slot = try OneGatedSlot(count: 6)
        let (requests, gate, log, store) = (slot.requests, slot.gate, slot.log, slot.store)
        store.startPrefetching(Array(requests.prefix(5)))
        try await waitUntil { gate.enteredCount == 1 && store.decodeSlots.waitingCount == 4 }
        let visible = Task { try await store.image(for: requests[5]) }
        try await waitUntil { store.decodeSlots.waitingCount == 5 }
        gate.open()
        _ = try await visible.value
        try await waitUntil { log.urls(of: .decode).count == 6 }
        let order = log.urls(of: .decode)
        #expect(order[1] == requests[5].url, "decode order: \(order.map(\.lastPathComponent))")
    }

    /// `count` small JPEGs behind a server on 127.0.0.1, each request held there until released (key
    /// its index), and a store whose loader has one connection to the host: the server's hits say which
    /// request the connection went to.
    struct OneConnection {
        let folder = TemporaryDirectory("connections")
        let server: TestHTTPServer
        let loader: DataLoader
        let store: ImageStore
        let paths: [String]
        let requests: [ImageRequest]

        init(count: Int) async throws {
            let names = try SampleImages.writeJPEGs(
                Array(repeating: PixelSize(width: 200, height: 100), count: count), into: folder.url)
            server = try await TestHTTPServer(serving: folder.url)
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpMaximumConnectionsPerHost = 1
            // Held requests wait for the test, which a loaded machine can stall for longer than the
            // default timeout (seen under ThreadSanitizer): the suite's time limit bounds them instead.
            let loader = DataLoader(timeout: 600, sessionConfiguration: configuration)
            self.loader = loader
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.dataLoader = loader
            }
            paths = names.indices.map { "/held/\($0)/images/\(names[$0])" }
            requests = paths.map { [server] in ImageRequest(url: server.url($0), targetWidth: 50) }
        }

        /// Prefetches the first request and waits until the server holds it, the connection taken.
        func takeTheConnection() async throws {
            store.startPrefetching([requests[0]])
            try await waitUntil { try await server.hits(for: paths[0]) == 1 }
        }

        /// Releases the first request, and returns the paths sent next on the freed connection (one).
        func releaseTheFirst() async throws -> [String] {
            try await server.release("0")
            let others = paths[1...]
            try await waitUntil { try await server.hits().filter { others.contains($0.key) }.count == 1 }
            return try await server.hits().keys.filter { others.contains($0) }
        }

        /// Releases every other request and waits for `visible` and the prefetches to end.
        func finish(_ visible: Task<PlatformImage, any Error>) async throws {
            for key in 1..<paths.count { try await server.release("\(key)") }
            _ = try await visible.value
            try await waitUntil { store.prefetches.withLock { $0.running.isEmpty } }
            server.stop()
        }
    }

    /// The downloads too: with prefetches queued for the host's only connection, a visible load of
    /// another image is sent next (before: after every prefetch queued ahead of it).
    @Test func aVisibleLoadGetsTheNextConnectionBeforeQueuedPrefetches() async throws {
        let line = try await OneConnection(count: 5)
        let (store, requests) = (line.store, line.requests)
        try await line.takeTheConnection()
        store.startPrefetching(Array(requests[1..<4]))
        try await waitUntil { line.loader.http.waitingTaskCount == 3 }
        let visible = Task(priority: .userInitiated) { try await store.image(for: requests[4]) }
        try await waitUntil { line.loader.http.waitingTaskCount == 4 }
        let sent = try await line.releaseTheFirst()
        #expect(sent == [line.paths[4]], "sent after the first: \(sent)")
        try await line.finish(visible)
    }

    /// A visible load that joins a prefetch whose download waits for the connection takes it up with
    /// it: sent next, before the prefetches queued ahead of it (before: after them, as a prefetch).
    @Test func aQueuedPrefetchThatAVisibleLoadJoinsGetsTheNextConnection() async throws {
        let line = try await OneConnection(count: 4)
        let (store, requests) = (line.store, line.requests)
        try await line.takeTheConnection()
        // Queued one by one, so that first come first served would send 1, 2, 3.
        for index in 1..<4 {
            store.startPrefetching([requests[index]])
            try await waitUntil { line.loader.http.waitingTaskCount == index }
        }
        let visible = Task(priority: .userInitiated) { try await store.image(for: requests[3]) }
        try await waitUntil { store.variantRuns.waiterCount(for: requests[3]) == 2 }
        let sent = try await line.releaseTheFirst()
        #expect(sent == [line.paths[3]], "sent after the first: \(sent)")
        try await line.finish(visible)
    }

    /// A row flung past a queued prefetch raises its download and leaves: the download queues as a
    /// prefetch again, behind a visible load that comes after (before: it kept the visible priority, so it
    /// was sent first).
    @Test func aQueuedPrefetchWhoseVisibleLoadLeftWaitsBehindTheNextVisibleLoadForTheConnection() async throws {
        let line = try await OneConnection(count: 5)
        let (store, requests) = (line.store, line.requests)
        try await line.takeTheConnection()
        for index in 1..<4 {
            store.startPrefetching([requests[index]])
            try await waitUntil { line.loader.http.waitingTaskCount == index }
        }
        let passing = Task(priority: .userInitiated) { try await store.image(for: requests[1]) }
        try await waitUntil { store.variantRuns.waiterCount(for: requests[1]) == 2 }
        passing.cancel()
        try await waitUntil { store.variantRuns.waiterCount(for: requests[1]) == 1 }
        let visible = Task(priority: .userInitiated) { try await store.image(for: requests[4]) }
        try await waitUntil { line.loader.http.waitingTaskCount == 4 }
        let sent = try await line.releaseTheFirst()
        #expect(sent == [line.paths[4]], "sent after the first: \(sent)")
        try await line.finish(visible)
    }

    /// A visible load joins a queued prefetch, whose download a visible load of another width also waits
    /// for; when that other load leaves, the download stays at visible priority for the one still waiting
    /// (before: it fell to the prefetch's, and a visible load of another image asked for later went first).
    @Test func aDownloadAVisibleLoadWaitsForThroughAPrefetchKeepsItsPlaceWhenAnotherWidthLeaves() async throws {
        let line = try await OneConnection(count: 5)
        let (store, requests) = (line.store, line.requests)
        try await line.takeTheConnection()
        store.startPrefetching([requests[1]])
        try await waitUntil { line.loader.http.waitingTaskCount == 1 }
        let wider = ImageRequest(url: requests[1].url, targetWidth: 80)
        let widerLoad = Task(priority: .userInitiated) { try await store.image(for: wider) }
        try await waitUntil { store.fetchRuns.waiterCount(for: requests[1].url.cacheKey) == 2 }
        let joined = Task(priority: .userInitiated) { try await store.image(for: requests[1]) }
        try await waitUntil { store.variantRuns.waiterCount(for: requests[1]) == 2 }
        widerLoad.cancel()
        try await waitUntil { store.fetchRuns.waiterCount(for: requests[1].url.cacheKey) == 1 }
        let visible = Task(priority: .userInitiated) { try await store.image(for: requests[4]) }
        try await waitUntil { line.loader.http.waitingTaskCount == 2 }
        let sent = try await line.releaseTheFirst()
        #expect(sent == [line.paths[1]], "sent after the first: \(sent)")
        try await line.finish(visible)
        _ = try await joined.value
    }

    @Test func stoppingPrefetchesKeepsQueuedOnesFromEverDecoding() async throws {
        let slot = try OneGatedSlot(count: 5)
        let (requests, gate, store) = (slot.requests, slot.gate, slot.store)
        store.startPrefetching(requests)
        try await waitUntil { gate.enteredCount == 1 && store.decodeSlots.waitingCount == 4 }
        store.stopPrefetching(requests)
        try await waitUntil { store.decodeSlots.waitingCount == 0 }
        gate.open()
        try await waitUntil { store.decodeSlots.busyCount == 0 && store.variantRuns.count == 0 }
        #expect(gate.enteredCount == 1)
    }

    @Test func aPrefetchStoppedAndStartedAgainCanStillBeStopped() async throws {
        // Scrolling away and back: the stopped prefetch ends after the new one started, and must
        // not take the new one's entry with it.
        let slot = try OneGatedSlot(count: 1)
        let (request, gate, store) = (slot.requests[0], slot.gate, slot.store)
        store.startPrefetching([request])
        store.stopPrefetching([request])
        store.startPrefetching([request])
        try await waitUntil { gate.enteredCount == 1 && store.variantRuns.waiterCount(for: request) == 1 }
        try await Task.sleep(for: .milliseconds(200))  // the stopped prefetch has returned by now
        #expect(store.prefetches.withLock { $0.running[request] } != nil, "the running prefetch is not tracked")
        store.stopPrefetching([request])
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 0 }
        gate.open()
        try await waitUntil { store.decodeSlots.busyCount == 0 && store.variantRuns.count == 0 }
        #expect(store.prefetches.withLock { $0.running.isEmpty })
    }

    @Test func aPrefetchThatAVisibleLoadJoinsIsRaisedToItsPriority() async throws {
        let slot = try OneGatedSlot(count: 4)
        let (requests, gate, log, store) = (slot.requests, slot.gate, slot.log, slot.store)
        store.startPrefetching(requests)
        try await waitUntil { gate.enteredCount == 1 && store.decodeSlots.waitingCount == 3 }
        // The last prefetch is queued last; a visible load of the same request moves it up.
        let visible = Task { try await store.image(for: requests[3]) }
        try await waitUntil { store.variantRuns.waiterCount(for: requests[3]) == 2 }
        gate.open()
        _ = try await visible.value
        try await waitUntil { log.urls(of: .decode).count == 4 }
        #expect(log.urls(of: .decode)[1] == requests[3].url)
    }

    @Test func aPrefetchThatAVisibleLoadJoinsGoesOnAtItsTaskPriorityDownloadIncluded() async throws {
        // The download runs in a task of its own, which the prefetch's task waits for: the escalation
        // reaches it only by passing on from the one to the other.
        let folder = TemporaryDirectory("prefetch-escalation")
        let loader = GatedLoader(bytes: try SampleImages.jpeg(width: 64, height: 48))
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let request = ImageRequest(url: URL(string: "https://images.example.com/raised.jpg")!, targetWidth: 32)
        store.startPrefetching([request])
        try await waitUntil { loader.hasStarted }
        #expect(loader.fetchPriorities?.atStart == .utility)
        let visible = Task(priority: .userInitiated) { try await store.image(for: request) }
        try await waitUntil { loader.fetchPriorities?.waiting == .userInitiated }
        loader.open()
        #expect(try await visible.value.pixelSize.width == 32)
        #expect(loader.loadCount == 1)
    }

    @Test func aPrefetchWhoseVisibleLoadLeftQueuesBehindTheNextVisibleLoad() async throws {
        let slot = try OneGatedSlot(count: 4)
        let (requests, gate, log, store) = (slot.requests, slot.gate, slot.log, slot.store)
        store.startPrefetching(Array(requests.prefix(3)))
        try await waitUntil { gate.enteredCount == 1 && store.decodeSlots.waitingCount == 2 }
        // The row of the last prefetch appears (raising it) and is flung away again.
        let passing = Task { try await store.image(for: requests[2]) }
        try await waitUntil { store.variantRuns.waiterCount(for: requests[2]) == 2 }
        passing.cancel()
        try await waitUntil { store.variantRuns.waiterCount(for: requests[2]) == 1 }
        let visible = Task { try await store.image(for: requests[3]) }
        try await waitUntil { store.decodeSlots.waitingCount == 3 }
        gate.open()
        _ = try await visible.value
        try await waitUntil { log.urls(of: .decode).count == 4 }
        let order = log.urls(of: .decode)
        #expect(order[1] == requests[3].url, "decode order: \(order.map(\.lastPathComponent))")
    }

    @Test func onlyAVisibleLoadResizesOnASecondThreadWhileItDecodes() async throws {
        // A prefetch has nobody waiting: it decodes and resizes on its slot's thread alone. A visible
        // load with a core to spare hands the resize to a second thread.
        let folder = TemporaryDirectory("overlap")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 400, height: 300), count: 2), into: folder.url)
        let requests = names.map { ImageRequest(url: folder.url.appendingPathComponent($0), targetWidth: 100) }
        let choices = LockedBox<[Bool]>([])
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 2
            $0.resizeThreadsObserver = { overlapping in choices.withLock { $0.append(overlapping) } }
        }
        store.startPrefetching([requests[0]])
        try await waitUntil { store.cachedImage(for: requests[0]) != nil }
        _ = try await store.image(for: requests[1])
        let spareCore = ProcessInfo.processInfo.activeProcessorCount > 1
        #expect(choices.withLock { $0 } == [false, spareCore])
    }

    @Test func aPrefetchResizesAWholeBitmapOnItsOwnThread() async throws {
        // A WebP decodes whole and is then resized: split across the cores for a visible load only.
        let folder = TemporaryDirectory("whole-resize")
        let urls = try (0..<2).map { index in
            let url = folder.url.appendingPathComponent("\(index).webp")
            try SampleImages.webp(SampleImages.detailed(width: 400, height: 300)).write(to: url)
            return url
        }
        let requests = urls.map { ImageRequest(url: $0, targetWidth: 100) }
        let choices = LockedBox<[Bool]>([])
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.resizeThreadsObserver = { usesOtherThreads in choices.withLock { $0.append(usesOtherThreads) } }
        }
        store.startPrefetching([requests[0]])
        try await waitUntil { store.cachedImage(for: requests[0]) != nil }
        let image = try await store.image(for: requests[1])
        #expect(image.pixelSize == PixelSize(width: 100, height: 75))
        #expect(choices.withLock { $0 } == [false, true])
    }

    @Test func aPrefetchThatAVisibleLoadJoinsWhileItDecodesResizesAsTheVisibleLoad() async throws {
        // The row appears while its prefetch decodes: the resize that follows the decode is the visible
        // load's, split across the cores as for any visible load (before: on one thread, as chosen for the
        // prefetch when its decode started).
        let folder = TemporaryDirectory("joined-resize")
        let url = folder.url.appendingPathComponent("0.png")
        try SampleImages.png(width: 1200, height: 900).write(to: url)
        let request = ImageRequest(url: url, targetWidth: 100)
        let gate = GatedDecoder()
        let choices = LockedBox<[Bool]>([])
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
            $0.resizeThreadsObserver = { usesOtherThreads in choices.withLock { $0.append(usesOtherThreads) } }
        }
        store.startPrefetching([request])
        try await waitUntil { gate.enteredCount == 1 }
        let visible = Task { try await store.image(for: request) }
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 2 }
        gate.open()
        #expect(try await visible.value.pixelSize == PixelSize(width: 100, height: 75))
        #expect(gate.enteredCount == 1)
        #expect(choices.withLock { $0 } == [true])
    }

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
        let hung = try await Self.stallTwentyLoads(of: server, image: names[0], in: store)
        defer { hung.forEach { $0.cancel() } }

        let fromDisk = Task { try await store.image(for: ImageRequest(url: cached, targetWidth: 100)) }
        try await waitUntil { store.statistics.diskHits == 1 }
        #expect(store.fetchSlots.waitingCount == 20 - store.fetchSlots.limit, "still stalled")
        // Cancelled before the load is awaited, so that a load stuck behind them fails the test, not hangs it.
        hung.forEach { $0.cancel() }
        #expect(try await fromDisk.value.pixelSize == PixelSize(width: 100, height: 50))
        for load in hung { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil { store.fetchSlots.sourceCount == 0 }
        #expect(try await server.hits()["/images/\(names[0])"] == 1)
    }

    @Test(arguments: [false, true])
    func prefetchesOfAHostThatDoesNotAnswerHoldUpOnlyThatHostsPrefetches(fromDisk: Bool) async throws {
        // A list prefetched ahead while its host stops answering (a server hung, a network that drops
        // packets): the host's prefetches take every prefetch slot, yet an image of the list already on
        // disk, or one of another host, is still prefetched. Before, they waited in line behind the
        // stalled prefetches until these ended at the request's timeout (60 s by default).
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let stalled = try await TestHTTPServer(serving: folder.url)
        let other = try await TestHTTPServer(serving: folder.url)
        defer {
            stalled.stop()
            other.stop()
        }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 1
            $0.dataLoader = DataLoader(timeout: 600)  // the stalled prefetches end when the test stops them
        }
        let target: ImageRequest
        if fromDisk {
            target = ImageRequest(url: stalled.url("/images/\(names[0])"), targetWidth: 100)
            _ = try await store.image(for: ImageRequest(url: target.url, targetWidth: 50))
            await onOwnThread { store.waitForDiskMaintenance() }
            store.clearMemory()  // as after a relaunch: on disk only
        } else {
            target = ImageRequest(url: other.url("/images/\(names[0])"), targetWidth: 100)
        }
        defer { store.stopPrefetching() }
        let hung = (0..<store.prefetchConcurrency).map { index in
            ImageRequest(url: stalled.url("/held/never/alias/\(index)/images/\(names[0])"), targetWidth: 50)
        }
        store.startPrefetching(hung)
        try await waitUntil { store.fetchRuns.count == hung.count }
        let decodes = store.statistics.decodes

        store.startPrefetching([target])
        // Started at once, not left in line (it may have ended already: from disk it is quick).
        let started = store.prefetches.withLock { $0.lineLength == 0 }
        #expect(started, "waits in line behind \(hung.count) prefetches of a host that does not answer")
        // Stopped before the target is awaited, so that a prefetch stuck behind them fails the test, not hangs it.
        if !started { store.stopPrefetching(hung) }
        try await waitUntil { store.cachedImage(for: target) != nil }
        #expect(store.cachedImage(for: target)?.pixelSize == PixelSize(width: 100, height: 50))
        #expect(store.statistics.decodes == decodes + 1)
        if started { #expect(store.fetchRuns.count == hung.count, "still stalled") }
        store.stopPrefetching()
        try await waitUntil { store.fetchRuns.count == 0 }
        if fromDisk { #expect(try await stalled.hits(for: "/images/\(names[0])") == 1) }
    }

    @Test func prefetchesOfManySourcesRunNoMoreAtOnceThanTheOverallBound() async throws {
        // Each source has its share of prefetches, but a list of images from many sources does not start
        // them all at once: beyond the overall bound they wait their turn.
        let folder = TemporaryDirectory("images")
        let loader = StalledSchemeLoader()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        defer { store.stopPrefetching() }
        let (perSource, total) = (store.prefetchConcurrency, store.prefetchTotalConcurrency)
        let requests = (0...ImageStore.prefetchSourcesAtOnce).flatMap { source in
            (0...perSource).map {
                ImageRequest(url: URL(string: "stalled\(source)://photos/\($0).jpg")!, targetWidth: 50)
            }
        }
        store.startPrefetching(requests)
        let running = store.prefetches.withLock { $0.running.values.map(\.source) }
        #expect(running.count == total, "\(running.count) of \(requests.count) prefetches running")
        #expect(Dictionary(grouping: running) { $0 }.values.allSatisfy { $0.count <= perSource })
        try await waitUntil { loader.stalledCount == total }
        store.stopPrefetching()
        try await waitUntil { store.fetchRuns.count == 0 }
    }

    /// One 200x100 JPEG behind a server on 127.0.0.1 that asks every load holding a fetch slot at once (16
    /// connections), and a store with one decode slot: the setting of a row's load taken over by a wider one
    /// while the host's other rows hold its slots.
    struct TakeoverHost {
        let folder = TemporaryDirectory("images")
        let names: [String]
        let server: TestHTTPServer
        let loader: DataLoader
        let store: ImageStore

        init() async throws {
            names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
            server = try await TestHTTPServer(serving: folder.url)
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpMaximumConnectionsPerHost = 16
            let loader = DataLoader(timeout: 600, sessionConfiguration: configuration)
            self.loader = loader
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decodeConcurrency = 1
                $0.dataLoader = loader
            }
        }
    }

    @Test func aWiderLoadTakingOverADownloadWhileItsHostsSlotsAreBusyDoesNotDownloadItAgain() async throws {
        // A row's frame grows while its image downloads and `CachedImageModel` replaces its load with a
        // wider one, in a grid whose other rows hold every fetch slot of the host. The wider load waits for
        // a slot, but the download it took over is its image's: once it lands, the wider load decodes it.
        // Before, the download ended with nobody waiting for it (the replaced load had left, the wider one
        // was not in yet), its bytes were dropped, and the wider load downloaded the image again.
        let host = try await TakeoverHost()
        defer { host.server.stop() }
        let (names, server, loader, store) = (host.names, host.server, host.loader, host.store)
        let path = "/held/taken-over/images/\(names[0])"
        let url = server.url(path)
        let narrow = store.load(ImageRequest(url: url, targetWidth: 50)) { _ in }
        try await waitUntil { loader.http.unfinishedTaskCount == 1 }
        let ahead = store.fetchSlots.limit
        let others = (1...ahead).map { index in
            Task {
                try await store.image(
                    for: ImageRequest(
                        url: server.url("/held/others/alias/\(index)/images/\(names[0])"), targetWidth: 50))
            }
        }
        defer { others.forEach { $0.cancel() } }
        // Every slot held, and one more row queued for one.
        try await waitUntil { loader.http.unfinishedTaskCount == ahead && store.fetchSlots.waitingCount == 1 }
        let widths = LockedBox([Int?]())
        let wider = store.load(ImageRequest(url: url, targetWidth: 100), replacing: narrow) { image in
            widths.withLock { $0.append(image?.pixelSize.width) }
        }
        defer { wider.cancel() }
        // The wider load is in: waiting for the download, or (before) for a slot, behind the queued row.
        try await waitUntil {
            store.variantRuns.waiterCount(for: ImageRequest(url: url, targetWidth: 50)) == 0
                && (store.fetchRuns.waiterCount(for: url.cacheKey) == 1 || store.fetchSlots.waitingCount == 2)
        }
        try await server.release("taken-over")
        // The slot the download held goes to the row queued first.
        try await waitUntil { loader.http.unfinishedTaskCount == ahead && store.fetchSlots.busyCount == ahead }
        try await server.release("others")
        for load in others { _ = try await load.value }
        try await waitUntil { !widths.withLock { $0 }.isEmpty }
        #expect(widths.withLock { $0 } == [100])
        let downloads = try await server.hits(for: path)
        #expect(downloads == 1, "the image taken over was downloaded \(downloads) times")
    }

    @Test func aDownloadHandedOverThatLandsBeforeItsTakerJoinsIsKept() async throws {
        // A download handed over (`CachedImageModel` replacing a row's load with a wider one) may land
        // before the wider load has joined it: here the wider load joins a run of its request that waits
        // for a fetch slot (another row of that width, queued behind the host's stalled rows), so it never
        // joins the download at all. The download ends with only the hand-over's hold on it: its bytes are
        // kept for the next load, and the wider rows decode them. Before, they were dropped, and the wider
        // rows, given the download's slot, downloaded the image a second time.
        // (The same ending follows when the download lands between the wider load's check for a download
        // in flight and its joining it.)
        let host = try await TakeoverHost()
        defer { host.server.stop() }
        let (names, server, loader, store) = (host.names, host.server, host.loader, host.store)
        let ahead = store.fetchSlots.limit
        let others = (0..<ahead).map { index in
            let key = index == 0 ? "first-other" : "others"
            let url = server.url("/held/\(key)/alias/\(index)/images/\(names[0])")
            return Task { try await store.image(for: ImageRequest(url: url, targetWidth: 50)) }
        }
        defer { others.forEach { $0.cancel() } }
        try await waitUntil { loader.http.unfinishedTaskCount == ahead }
        let path = "/held/taken-over/images/\(names[0])"
        let url = server.url(path)
        let narrow = store.load(ImageRequest(url: url, targetWidth: 50)) { _ in }
        try await waitUntil { store.fetchSlots.waitingCount == 1 }
        let wide = ImageRequest(url: url, targetWidth: 100)
        let otherRow = Task { try await store.image(for: wide) }
        defer { otherRow.cancel() }
        try await waitUntil { store.fetchSlots.waitingCount == 2 }
        // One stalled row ends: its slot goes to the narrow row, which starts the download.
        try await server.release("first-other")
        _ = try await others[0].value
        try await waitUntil {
            store.fetchRuns.waiterCount(for: url.cacheKey) == 1 && store.fetchSlots.waitingCount == 1
                && loader.http.unfinishedTaskCount == ahead
        }
        let widths = LockedBox([Int?]())
        let wider = store.load(wide, replacing: narrow) { image in
            widths.withLock { $0.append(image?.pixelSize.width) }
        }
        defer { wider.cancel() }
        try await waitUntil {
            store.variantRuns.waiterCount(for: wide) == 2
                && store.variantRuns.waiterCount(for: ImageRequest(url: url, targetWidth: 50)) == 0
        }
        #expect(store.fetchRuns.waiterCount(for: url.cacheKey) == 0, "the download is held, not waited for")
        try await server.release("taken-over")
        // Both wider rows get the image while the host's other rows still stall.
        #expect(try await otherRow.value.pixelSize == PixelSize(width: 100, height: 50))
        try await waitUntil { !widths.withLock { $0 }.isEmpty }
        #expect(widths.withLock { $0 } == [100])
        try await server.release("others")
        for load in others { _ = try await load.value }
        let downloads = try await server.hits(for: path)
        #expect(downloads == 1, "the image handed over was downloaded \(downloads) times")
    }

    @Test func aDecodeThatFailsLeavesAnotherDownloadOfItsURLHeldForTheNextLoad() async throws {
        // A load too wide for the pixel budget waits for the decode slot with its download while the image
        // is removed (`removeImage(for:)`, a user's new avatar) and downloaded again by a narrower row that
        // then scrolls away: the new download is held for the next load. The wide decode failing lets go
        // of its own bytes only. Before, it dropped the held download too, and the next load of the narrow
        // row downloaded the image a third time.
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(
            [PixelSize(width: 400, height: 300), PixelSize(width: 200, height: 100)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let gate = GatedDecoder(holdingOnly: try Data(contentsOf: folder.url.appendingPathComponent(names[1])))
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 1
            $0.decoder = gate
            $0.pixelBudget = 400 * 300 - 1  // whole, the image is over it; 100 px wide (at 1/4), within it
        }
        let filler = Task { try await store.image(for: ImageRequest(url: server.url("/images/\(names[1])"))) }
        defer { gate.open() }
        try await waitUntil { gate.enteredCount == 1 }  // holds the one decode slot
        let path = "/images/\(names[0])"
        let url = server.url(path)
        let whole = Task { try await store.image(for: ImageRequest(url: url)) }
        try await waitUntil { store.decodeSlots.waitingCount == 1 }
        store.removeImage(for: url)
        try await waitUntil { store.replacementCount(of: url) == 1 }
        let narrow = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 100)) }
        try await waitUntil { store.decodeSlots.waitingCount == 2 }
        narrow.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await narrow.value }
        // Held by its run as that run ends, which it does after the load has left.
        try await waitUntil { store.undecodedOriginals.contains(url.cacheKey) && store.decodeSlots.waitingCount == 1 }
        gate.open()
        _ = try await filler.value
        await #expect(throws: ImageLoadingError.self) { try await whole.value }
        #expect(store.undecodedOriginals.contains(url.cacheKey), "the held download was dropped")
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        #expect(image.pixelSize == PixelSize(width: 100, height: 75))
        let downloads = try await server.hits(for: path)
        #expect(downloads == 2, "\(downloads) downloads: the wide load's, the narrow row's, and more")
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

    @Test func aPrefetchStoppedWhileWaitingItsTurnNeverFetches() async throws {
        let slot = try OneGatedSlot(count: 20)
        let (requests, gate, log, store) = (slot.requests, slot.gate, slot.log, slot.store)
        store.startPrefetching(requests)
        try await waitUntil { gate.enteredCount == 1 }
        store.stopPrefetching(Array(requests.suffix(10)))
        gate.open()
        try await waitUntil { log.urls(of: .decode).count == 10 && store.prefetches.withLock { $0.running.isEmpty } }
        #expect(Set(log.urls(of: .fetch)) == Set(requests.prefix(10).map(\.url)))
    }

    /// Rows started and stopped again and again while every prefetch slot is busy: the line holds
    /// what waits, not every start since the slots filled.
    @Test func startingAndStoppingWhileEverySlotIsBusyKeepsTheLineShort() async throws {
        let slot = try OneGatedSlot(count: 30)
        let (requests, gate, store) = (slot.requests, slot.gate, slot.store)
        store.startPrefetching(Array(requests.prefix(store.prefetchConcurrency)))
        try await waitUntil { gate.enteredCount == 1 }
        let rows = Array(requests.suffix(10))
        for _ in 0..<1000 {
            store.startPrefetching(rows)
            store.stopPrefetching(rows)
        }
        store.startPrefetching(rows)
        #expect(store.prefetches.withLock { $0.lineLength } <= 2 * rows.count + 32)
        gate.open()
        store.stopPrefetching()
    }

    /// Rows of many sources (avatars from many hosts) started and stopped while four sources' prefetches
    /// stall and fill the overall bound: the lines hold what waits, not a stopped request per source seen.
    @Test func startingAndStoppingRowsOfManySourcesWhileStalledPrefetchesFillTheBoundKeepsTheLinesShort()
        async throws
    {
        let folder = TemporaryDirectory("lines")
        let loader = StalledSchemeLoader()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        let stalled = (0..<store.prefetchTotalConcurrency).map { index in
            let scheme = "stalled\(index % ImageStore.prefetchSourcesAtOnce)"
            return ImageRequest(url: URL(string: "\(scheme):\(index).jpg")!, targetWidth: 50)
        }
        store.startPrefetching(stalled)
        try await waitUntil { loader.stalledCount == stalled.count }
        let rows = (0..<1000).map {
            ImageRequest(url: URL(string: "https://host\($0).example/a.jpg")!, targetWidth: 50)
        }
        for row in rows {
            store.startPrefetching([row])
            store.stopPrefetching([row])
        }
        let length = store.prefetches.withLock { $0.lineLength }
        #expect(length <= 32, "\(length) stopped requests kept in line, none waiting")
        #expect(store.prefetches.withLock { $0.running.count } == stalled.count)
        store.stopPrefetching()
    }

    @MainActor
    @Test func aFlingThatStartsAndCancels300LoadsInOneFrameStartsAtMostTheSlotsWorthOfDecodes() async throws {
        let folder = TemporaryDirectory("fling")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 320, height: 240), count: 60), into: folder.url)
        let decoder = CountingDecoder()
        let log = StageLog()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = decoder
            $0.stageObserver = log.observer
        }
        let requests = names.flatMap { name in
            [40, 60, 80, 100, 120].map {
                ImageRequest(url: folder.url.appendingPathComponent(name), targetWidth: CGFloat($0))
            }
        }
        #expect(requests.count == 300)
        let completions = LockedBox(0)
        var cancelled: [URL: ContinuousClock.Instant] = [:]
        // One frame: every row appears and is flung away before the main actor yields.
        let tasks = requests.map { request in store.load(request) { _ in completions.withLock { $0 += 1 } } }
        for (task, request) in zip(tasks, requests) {
            task.cancel()
            cancelled[request.url] = ContinuousClock.now  // the last of the URL's rows to go
        }
        try await waitUntil { completions.withLock { $0 } == 300 }
        try await waitUntil { store.variantRuns.count == 0 && store.fetchRuns.count == 0 }
        #expect(decoder.count <= store.decodeSlots.limit)
        for (url, started) in log.times(of: .decode) {
            #expect(
                started < cancelled[url]!, "a decode of \(url.lastPathComponent) started after its row was cancelled")
        }
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
}

/// A custom source's loader: `stalled:` URLs, and those of any scheme that starts so (`stalled1:`), never
/// answer until their load is cancelled (a source as slow as a host that sends nothing); every other URL
/// goes to the package's own loader.
private final class StalledSchemeLoader: DataLoading {
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
