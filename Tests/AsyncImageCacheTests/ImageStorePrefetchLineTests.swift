import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import AsyncImageCache

/// Prefetch lines: stopped prefetches never fetch or decode, a source that does not answer holds up only
/// its own prefetches, and the lines stay short and bounded overall.
@Suite(.timeLimit(.minutes(3))) struct ImageStorePrefetchLineTests {
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
}
