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

    @Test func aPrefetchThatAVisibleLoadJoinsIsRaisedToItsPriority() async throws {
        let slot = try OneGatedSlot(count: 4)
        let (requests, gate, log, store) = (slot.requests, slot.gate, slot.log, slot.store)
        // Started one by one, so that the first holds the slot and the others queue in order: started
        // together, their reads could finish in any order, and under ThreadSanitizer the last one's
        // decode once took the slot first.
        store.startPrefetching([requests[0]])
        try await waitUntil { gate.enteredCount == 1 }
        for (index, request) in requests.enumerated().dropFirst() {
            store.startPrefetching([request])
            try await waitUntil { store.decodeSlots.waitingCount == index }
        }
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
        // One by one, so that the first holds the slot and the last is queued (see the test above).
        store.startPrefetching([requests[0]])
        try await waitUntil { gate.enteredCount == 1 }
        for index in 1...2 {
            store.startPrefetching([requests[index]])
            try await waitUntil { store.decodeSlots.waitingCount == index }
        }
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
}
