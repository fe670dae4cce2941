import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import AsyncImageCache

/// The fetch slots of loads that a redirect leads to another host (`/avatar/42` to a CDN): they count
/// under the host they fetch from, so a host that does not answer holds up only its own loads, and the
/// bytes fetched ahead of the decodes stay bounded per host.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreRedirectSchedulingTests {
    /// An origin that redirects and a CDN it redirects to, both on 127.0.0.1 (two hosts: two ports),
    /// serving small JPEGs, and a store with one decode slot whose stalled loads stall until cancelled.
    struct OriginAndCDN {
        let folder = TemporaryDirectory("redirects")
        let names: [String]
        let origin: TestHTTPServer
        let cdn: TestHTTPServer
        /// Stalled loads end when the test cancels them or releases their answers, never by the
        /// request's timeout, however loaded the machine.
        let loader: DataLoader
        let store: ImageStore

        /// `connectionsPerHost` replaces the session's default (6) when given: more than the store's fetch
        /// slots per host, every load that holds one is asked of its host at once.
        init(connectionsPerHost: Int? = nil) async throws {
            names = try SampleImages.writeJPEGs(
                Array(repeating: PixelSize(width: 200, height: 100), count: 2), into: folder.url)
            origin = try await TestHTTPServer(serving: folder.url)
            cdn = try await TestHTTPServer(serving: folder.url)
            let configuration = connectionsPerHost.map { connections in
                let configuration = URLSessionConfiguration.ephemeral
                configuration.httpMaximumConnectionsPerHost = connections
                return configuration
            }
            let loader = DataLoader(timeout: 600, sessionConfiguration: configuration)
            self.loader = loader
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decodeConcurrency = 1
                $0.dataLoader = loader
            }
        }

        /// A visible load of the origin's URL that redirects to the CDN's `/held/never/` alias `index`.
        func stalledLoad(_ index: Int) -> Task<PlatformImage, any Error> {
            let target = cdn.url("/held/never/alias/\(index)/images/\(names[0])")
            let url = origin.redirect(to: target)
            return Task { [store] in try await store.image(for: ImageRequest(url: url, targetWidth: 50)) }
        }

        /// The redirects the origin has answered.
        func redirects() async throws -> Int {
            try await origin.hits(for: "/redirect-to/302")
        }

        /// Starts as many stalled loads as there are slots per host, waits until they hold every slot of
        /// the CDN, then starts `next` and waits until the origin has redirected it and it waits for one.
        func fillTheCDNSlots(
            thenStart next: () -> Task<PlatformImage, any Error>
        ) async throws -> (stalled: [Task<PlatformImage, any Error>], next: Task<PlatformImage, any Error>) {
            let store = store
            let ahead = store.fetchSlots.limit
            let stalled = (0..<ahead).map { stalledLoad($0) }
            try await waitUntil { try await redirects() == ahead && store.fetchSlots.busyCount == ahead }
            let started = next()
            // Its download is registered (polled without asking the origin, so that a load that never
            // gets that far fails the wait in 60 s), and it waits for a slot.
            let loader = loader
            try await waitUntil {
                loader.http.unfinishedTaskCount == ahead + 1 && store.fetchSlots.waitingCount == 1
            }
            try #require(try await redirects() == ahead + 1, "the load is redirected before it waits")
            return (stalled, started)
        }

        func stop() {
            origin.stop()
            cdn.stop()
        }
    }

    @Test(arguments: [1e10, .greatestFiniteMagnitude] as [TimeInterval])
    func aRedirectToAnotherHostLoadsUnderAResourceTimeoutBeyondWhatADispatchTimeHolds(
        _ resourceTimeout: TimeInterval
    ) async throws {
        // A visible load's deadline stops while its redirect waits for a fetch slot of the new host, and
        // the time it had left is worked out from the deadline: for a resource timeout past ~292 years
        // (`.greatestFiniteMagnitude`, as for no limit) that is `DispatchTime.distantFuture`, whose
        // nanoseconds do not fit an `Int64`. Before, working it out trapped the process.
        let folder = TemporaryDirectory("far-deadline")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let origin = try await TestHTTPServer(serving: folder.url)
        let cdn = try await TestHTTPServer(serving: folder.url)
        defer {
            origin.stop()
            cdn.stop()
        }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = DataLoader(resourceTimeout: resourceTimeout)
        }
        let url = origin.redirect(to: cdn.url("/images/\(names[0])"))
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 50))
        #expect(image.pixelSize == PixelSize(width: 50, height: 25))
        #expect(try await cdn.hits(for: "/images/\(names[0])") == 1)
    }

    @Test func loadsStuckAtTheHostTheyAreRedirectedToDoNotHoldUpTheLoadsTheFirstHostServes() async throws {
        // Avatars redirected to a CDN that sends nothing (until the timeout) wait for the CDN's slots;
        // an image the origin serves itself still loads meanwhile (before: the redirected loads held
        // every slot of the origin, and it waited until they ended).
        let hosts = try await OriginAndCDN()
        defer { hosts.stop() }
        let store = hosts.store
        let ahead = store.fetchSlots.limit
        let stalled = (0..<(ahead + 2)).map { hosts.stalledLoad($0) }
        defer { stalled.forEach { $0.cancel() } }
        // Every redirected load is stuck at the CDN before the origin is asked for its own image: as many as it
        // has slots hold them, and the other two, sent and redirected, wait for one (polled without asking the
        // origin, so that loads that never get that far fail the wait in 60 s). Before, the direct load could
        // start while those two were yet to reach the origin, and the count below be read before they had.
        let loader = hosts.loader
        try await waitUntil {
            loader.http.unfinishedTaskCount == ahead + 2 && store.fetchSlots.busyCount == ahead
                && store.fetchSlots.waitingCount == 2
        }
        let direct = hosts.origin.url("/images/\(hosts.names[1])")
        let served = Task { try await store.image(for: ImageRequest(url: direct)) }
        try await waitUntil { store.statistics.decodes == 1 }
        #expect(try await hosts.redirects() == ahead + 2, "every redirected load left the origin's slots")
        stalled.forEach { $0.cancel() }
        #expect(try await served.value.pixelSize == PixelSize(width: 200, height: 100))
        for load in stalled { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil { store.fetchSlots.sourceCount == 0 && store.fetchSlots.waitingCount == 0 }
    }

    @Test(arguments: [1, 2])
    func aBurstOfLoadsRedirectedToOneHostFetchesOnlyAFewImagesAheadOfTheDecodes(origins: Int) async throws {
        // Rows of one or two origins whose images all redirect to one CDN, which answers faster than the
        // decodes: the CDN's slots bound the images fetched and held ahead, as they do for loads of the
        // CDN's own URLs. Before: they counted under the origins, each origin's slots fetching its own
        // share ahead (17 of 30 for two origins).
        let folder = TemporaryDirectory("burst")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let cdn = try await TestHTTPServer(serving: folder.url)
        var servers = [cdn]
        for _ in 0..<origins { servers.append(try await TestHTTPServer(serving: folder.url)) }
        defer { servers.forEach { $0.stop() } }
        let (gate, log) = (GatedDecoder(), StageLog())
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
            $0.decodeConcurrency = 1
            $0.stageObserver = log.observer
        }
        let count = 30
        let loads = (0..<count).map { index in
            let target = cdn.url("/alias/\(index)/images/\(names[0])")
            let url = servers[1 + index % origins].redirect(to: target)
            return Task { try await store.image(for: ImageRequest(url: url, targetWidth: 50)) }
        }
        let ahead = store.fetchSlots.limit
        // Every load accounted for: one decoding, `ahead` holding their bytes (and the CDN's slots) for the
        // decode slot, and the rest waiting for a slot of the CDN, where none can fetch until a slot is given
        // back. Loads that fetched ahead would never let the counts meet, and the wait fails in 60 s.
        try await waitUntil {
            gate.enteredCount == 1 && store.decodeSlots.waitingCount == ahead
                && store.fetchSlots.waitingCount == count - ahead - 1
        }
        let fetched = try await cdn.hits().values.reduce(0, +)
        let held = store.decodingOriginals.withLock { $0.count }
        #expect(fetched == ahead + 1, "\(fetched) of \(count) images fetched with one decode running")
        #expect(held == ahead + 1, "\(held) images' bytes held, one decoding and the rest waiting for its slot")
        #expect(store.decodeSlots.waitingCount == ahead)
        gate.open()
        for load in loads { _ = try await load.value }
        let hits = try await cdn.hits()
        #expect(hits.count == count && hits.values.allSatisfy { $0 == 1 }, "\(hits)")
        #expect(log.urls(of: .decode).count == count)
        try await waitUntil { store.fetchSlots.busyCount == 0 && store.fetchSlots.sourceCount == 0 }
    }

    @Test func aLoadCancelledWhileWaitingForTheSlotOfTheHostItIsRedirectedToAsksThatHostNothing() async throws {
        let hosts = try await OriginAndCDN()
        defer { hosts.stop() }
        let store = hosts.store
        let ahead = store.fetchSlots.limit
        // Redirected, it waits for one of the CDN's slots.
        let (stalled, waiting) = try await hosts.fillTheCDNSlots { hosts.stalledLoad(ahead) }
        defer { stalled.forEach { $0.cancel() } }
        waiting.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await waiting.value }
        try await waitUntil { store.fetchSlots.waitingCount == 0 }
        #expect(store.fetchSlots.busyCount == ahead)
        try await hosts.cdn.release("never")
        for load in stalled { _ = try await load.value }
        let path = "/held/never/alias/\(ahead)/images/\(hosts.names[0])"
        #expect(try await hosts.cdn.hits(for: path) == 0)
        #expect(try await hosts.cdn.hits().values.reduce(0, +) == ahead)
        try await waitUntil {
            store.fetchSlots.busyCount == 0 && store.fetchSlots.waitingCount == 0 && store.fetchSlots.sourceCount == 0
        }
    }

    @Test func aLoadWaitingForTheSlotOfTheHostItIsRedirectedToGoesOnWithoutOneOnceOnlyAPrefetchWantsIt() async throws {
        // A row scrolled away while its image, redirected to a CDN whose slots are all held, is also
        // prefetched: its run is a prefetch now, and prefetches take no fetch slot, so it stops waiting
        // for one and gets in line for a connection to the CDN.
        let hosts = try await OriginAndCDN()
        defer { hosts.stop() }
        let store = hosts.store
        let ahead = store.fetchSlots.limit
        let path = "/held/later/alias/\(ahead)/images/\(hosts.names[0])"
        let request = ImageRequest(url: hosts.origin.redirect(to: hosts.cdn.url(path)), targetWidth: 50)
        let (stalled, visible) = try await hosts.fillTheCDNSlots { Task { try await store.image(for: request) } }
        defer { stalled.forEach { $0.cancel() } }
        store.startPrefetching([request])
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 2 }
        visible.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await visible.value }
        try await waitUntil { store.fetchSlots.waitingCount == 0 }
        #expect(store.fetchSlots.busyCount == ahead)
        try await hosts.cdn.release("never")
        try await hosts.cdn.release("later")
        for load in stalled { _ = try await load.value }
        try await waitUntil {
            store.statistics.decodes == ahead + 1 && store.prefetches.withLock { $0.running.isEmpty }
        }
        #expect(try await hosts.cdn.hits(for: path) == 1)
        #expect(store.statistics.failures == 0)
        try await waitUntil { store.fetchSlots.busyCount == 0 && store.fetchSlots.sourceCount == 0 }
    }

    @Test func everyWidthOfAnImageRedirectedToACDNAndBackToTheOriginLoads() async throws {
        // One download serves every width; each width's run took a slot of the origin before it joined it.
        // Coming back to the origin, the download waits for one of the origin's slots: held by those
        // runs, which wait for it, they were never given back (before: 0 of 9 decoded, 8 slots busy).
        let hosts = try await OriginAndCDN()
        defer { hosts.stop() }
        let store = hosts.store
        let url = hosts.origin.redirect(to: hosts.cdn.redirect(to: hosts.origin.url("/images/\(hosts.names[1])")))
        let widths = (1...(store.fetchSlots.limit + 1)).map { CGFloat(10 * $0) }
        let loads = widths.map { width in
            Task { try await store.image(for: ImageRequest(url: url, targetWidth: width)) }
        }
        defer { loads.forEach { $0.cancel() } }
        try await waitUntil { store.statistics.decodes == widths.count }
        for load in loads { _ = try await load.value }
        #expect(try await hosts.origin.hits(for: "/images/\(hosts.names[1])") == 1)
        try await waitUntil { store.fetchSlots.busyCount == 0 && store.fetchSlots.sourceCount == 0 }
    }

    @Test func aLoadWaitingForTheSlotOfTheHostItIsRedirectedToDoesNotRunOutOfTimeBeforeItAsksIt() async throws {
        // The CDN's slots are held by loads whose bytes wait for the one decode slot, longer than the
        // resource timeout. A load of the CDN's own URL waits for a slot before its download starts, and
        // its time does not run meanwhile; one redirected there waits as long, and is not cut short either
        // (before: it failed with .timedOut, never having asked the CDN).
        let folder = TemporaryDirectory("slot-wait-timeout")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let origin = try await TestHTTPServer(serving: folder.url)
        let cdn = try await TestHTTPServer(serving: folder.url)
        defer { [origin, cdn].forEach { $0.stop() } }
        let gate = GatedDecoder()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
            $0.decodeConcurrency = 1
            $0.dataLoader = DataLoader(timeout: 600, resourceTimeout: 3)
        }
        let ahead = store.fetchSlots.limit
        let queued = (0...ahead).map { index in
            Task { try await store.image(for: ImageRequest(url: cdn.url("/alias/\(index)/images/\(names[0])"))) }
        }
        try await waitUntil { gate.enteredCount == 1 && store.decodeSlots.waitingCount == ahead }
        let direct = cdn.url("/alias/100/images/\(names[0])")
        let redirected = origin.redirect(to: cdn.url("/alias/101/images/\(names[0])"))
        let loads = [direct, redirected].map { url in Task { try await store.image(for: ImageRequest(url: url)) } }
        try await waitUntil { store.fetchSlots.waitingCount == 2 }
        try await Task.sleep(for: .seconds(4))  // past the resource timeout
        gate.open()
        for load in queued { _ = try await load.value }
        var outcomes: [String] = []
        for load in loads {
            do {
                _ = try await load.value
                outcomes.append("loaded")
            } catch {
                outcomes.append("\(error)")
            }
        }
        #expect(outcomes == ["loaded", "loaded"])
        try await waitUntil { store.fetchSlots.busyCount == 0 && store.fetchSlots.sourceCount == 0 }
    }
}
