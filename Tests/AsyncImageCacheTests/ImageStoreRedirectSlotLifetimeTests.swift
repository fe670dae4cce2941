import Foundation
import Testing

@testable import AsyncImageCache

/// How long a fetch slot that moves with a redirect lives: while the runs that want its download come and
/// go, while the store is let go, and while the loads that hold the slots it waits for stall.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreRedirectSlotLifetimeTests {
    typealias OriginAndCDN = ImageStoreRedirectSchedulingTests.OriginAndCDN

    @Test func aDownloadAnotherWidthStillWantsKeepsItsFetchSlotWhenTheRunThatStartedItIsCancelled() async throws {
        // Two widths of one avatar share its download; the row that started it scrolls away (cancelled)
        // while the other still shows. The download goes on for that row under a slot: redirected to a CDN
        // whose slots the CDN's own loads all hold, it waits for one. Every load is asked of its host at
        // once (16 connections), so an image fetched without a slot is one the CDN is asked for beyond them.
        let hosts = try await OriginAndCDN(connectionsPerHost: 16)
        defer { hosts.stop() }
        let store = hosts.store
        let ahead = store.fetchSlots.limit
        let path = "/held/later/alias/\(ahead)/images/\(hosts.names[0])"
        let (url, first) = try await hosts.startLoadHeldAtTheOrigin(redirectingTo: path)
        defer { first.cancel() }
        let second = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 100)) }
        defer { second.cancel() }
        // It joins the download and gives back the slot it took.
        try await waitUntil { store.fetchRuns.waiterCount(for: url.cacheKey) == 2 && store.fetchSlots.busyCount == 1 }
        first.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await first.value }
        #expect(store.fetchSlots.busyCount == 1, "the download goes on for the other width, under a slot")
        let direct = try await hosts.fillTheCDN()
        defer { direct.forEach { $0.cancel() } }
        try await hosts.origin.release("origin")
        // Redirected: it waits for one of the CDN's slots, or (without one) asks the CDN at once.
        try await waitUntil {
            let asked = try await hosts.cdn.hits(for: path)
            return store.fetchSlots.waitingCount == 1 || asked == 1
        }
        let asked = try await hosts.cdn.hits().values.reduce(0, +)
        #expect(asked == ahead, "the CDN was asked for \(asked) images at once, its \(ahead) fetch slots all held")
        #expect(store.fetchSlots.waitingCount == 1)
        try await hosts.cdn.release("never")
        for load in direct { _ = try await load.value }
        try await hosts.cdn.release("later")
        #expect(try await second.value.pixelSize == PixelSize(width: 100, height: 50))
        #expect(try await hosts.cdn.hits(for: path) == 1)
        try await waitUntil {
            store.fetchSlots.busyCount == 0 && store.fetchSlots.waitingCount == 0 && store.fetchSlots.sourceCount == 0
        }
    }

    @Test(arguments: [false, true])
    func aDownloadOnlyAPrefetchStillWantsGivesItsFetchSlotBackWhenTheRunThatStartedItIsCancelled(
        visibleLeavesLast: Bool
    ) async throws {
        // As above, but the other width is only prefetched: prefetches take no slot, so the download gives
        // the slot back as the visible run leaves, and its redirect asks the CDN without waiting for one.
        // Or a visible load of that width waits as well, and leaves after the first: the download keeps
        // the slot for it, and gives it back as it leaves, only the prefetch of its width left.
        let hosts = try await OriginAndCDN(connectionsPerHost: 16)
        defer { hosts.stop() }
        let store = hosts.store
        let path = "/alias/\(store.fetchSlots.limit)/images/\(hosts.names[0])"
        let (url, first) = try await hosts.startLoadHeldAtTheOrigin(redirectingTo: path)
        defer { first.cancel() }
        let other = ImageRequest(url: url, targetWidth: 100)
        let visible = visibleLeavesLast ? Task { try await store.image(for: other) } : nil
        defer { visible?.cancel() }
        if visibleLeavesLast {
            try await waitUntil { store.fetchRuns.waiterCount(for: url.cacheKey) == 2 }
        }
        store.startPrefetching([other])
        try await waitUntil {
            store.fetchRuns.waiterCount(for: url.cacheKey) == 2 && store.fetchSlots.busyCount == 1
                && store.variantRuns.waiterCount(for: other) == (visibleLeavesLast ? 2 : 1)
        }
        first.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await first.value }
        if let visible {
            #expect(store.fetchSlots.busyCount == 1, "kept for the visible load of the other width")
            visible.cancel()
            await #expect(throws: ImageLoadingError.cancelled) { try await visible.value }
        }
        try await waitUntil { store.fetchSlots.busyCount == 0 }
        let direct = try await hosts.fillTheCDN()
        defer { direct.forEach { $0.cancel() } }
        try await hosts.origin.release("origin")
        try await waitUntil { store.statistics.decodes == 1 && store.prefetches.withLock { $0.running.isEmpty } }
        #expect(try await hosts.cdn.hits(for: path) == 1)
        direct.forEach { $0.cancel() }
        for load in direct { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil {
            store.fetchSlots.busyCount == 0 && store.fetchSlots.waitingCount == 0 && store.fetchSlots.sourceCount == 0
        }
    }

    @Test func aDownloadKeptForAVisibleLoadOfAnotherWidthWaitsForTheHostItIsRedirectedToAsAVisibleLoad() async throws {
        // The row that started a download scrolls out of view but stays in the prefetch window (its run is
        // lowered to a prefetch) while a row of another width still shows: the download keeps its slot for
        // that row, and its redirect waits for one of the CDN's at that row's priority. A visible load of the
        // CDN that comes after it does not take the next free slot first. Before, it waited at the
        // prefetch's priority, behind every visible load of the CDN, however late.
        let hosts = try await OriginAndCDN(connectionsPerHost: 16)
        defer { hosts.stop() }
        let store = hosts.store
        let ahead = store.fetchSlots.limit
        // Both held at the CDN once asked, so that the first asked holds the slot that freed.
        let path = "/held/later/alias/\(ahead)/images/\(hosts.names[0])"
        let (url, first) = try await hosts.startLoadHeldAtTheOrigin(redirectingTo: path)
        defer { first.cancel() }
        let scrolledAway = ImageRequest(url: url, targetWidth: 50)
        let second = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 100)) }
        defer { second.cancel() }
        store.startPrefetching([scrolledAway])
        defer { store.stopPrefetching() }
        try await waitUntil {
            store.fetchRuns.waiterCount(for: url.cacheKey) == 2 && store.fetchSlots.busyCount == 1
                && store.variantRuns.waiterCount(for: scrolledAway) == 2
        }
        first.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await first.value }
        #expect(store.fetchSlots.busyCount == 1, "kept for the visible load of the other width")
        let direct = try await hosts.fillTheCDN()
        defer { direct.forEach { $0.cancel() } }
        try await hosts.origin.release("origin")
        try await waitUntil { store.fetchSlots.waitingCount == 1 }
        let laterPath = "/held/never/alias/\(ahead + 1)/images/\(hosts.names[0])"
        let later = Task { try await store.image(for: ImageRequest(url: hosts.cdn.url(laterPath))) }
        defer { later.cancel() }
        try await waitUntil { store.fetchSlots.waitingCount == 2 }
        // One of the CDN's slots frees: it goes to the download, first in line.
        direct[0].cancel()
        try await waitUntil { try await hosts.cdn.hits(for: path) + hosts.cdn.hits(for: laterPath) == 1 }
        #expect(try await hosts.cdn.hits(for: path) == 1, "the kept download was asked of the CDN first")
        #expect(try await hosts.cdn.hits(for: laterPath) == 0, "the later visible load waits its turn")
        try await hosts.cdn.release("never")
        try await hosts.cdn.release("later")
        #expect(try await second.value.pixelSize == PixelSize(width: 100, height: 50))
        _ = try await later.value
        direct.forEach { $0.cancel() }
        for load in direct { _ = try? await load.value }
        try await waitUntil {
            store.prefetches.withLock { $0.running.isEmpty } && store.fetchSlots.busyCount == 0
                && store.fetchSlots.waitingCount == 0 && store.fetchSlots.sourceCount == 0
        }
    }

    @MainActor
    @Test func aDownloadAWiderLoadTakesOverKeepsItsFetchSlot() async throws {
        // A row's frame grows while its image is on the way, and `CachedImageModel` replaces its load with a
        // wider one, which takes the download over. The download goes on under the slot of the load it
        // replaced: redirected to a CDN whose slots the CDN's own loads all hold, it waits for one. Before,
        // that slot went back as the replaced load ended, with no load left waiting for the download, and
        // the wider load gave its own back as it joined: the CDN was asked for one image beyond its slots.
        let hosts = try await OriginAndCDN(connectionsPerHost: 16)
        defer { hosts.stop() }
        let (store, loader) = (hosts.store, hosts.loader)
        let ahead = store.fetchSlots.limit
        let path = "/held/later/alias/\(ahead)/images/\(hosts.names[0])"
        let redirect = hosts.origin.redirect(to: hosts.cdn.url(path)).absoluteString
        let url = URL(string: redirect.replacingOccurrences(of: "/redirect-to/", with: "/held/origin/redirect-to/"))!
        let narrowRequest = ImageRequest(url: url, targetWidth: 50)
        let widerRequest = ImageRequest(url: url, targetWidth: 100)
        let narrow = store.load(narrowRequest) { _ in }
        try await waitUntil { loader.http.unfinishedTaskCount == 1 && store.fetchSlots.busyCount == 1 }
        let widths = LockedBox([Int?]())
        let wider = store.load(widerRequest, replacing: narrow) { image in
            widths.withLock { $0.append(image?.pixelSize.width) }
        }
        defer { wider.cancel() }
        // The narrow load has left (before the wider one starts), and the wider one joined the download.
        try await waitUntil {
            store.variantRuns.waiterCount(for: narrowRequest) == 0
                && store.variantRuns.waiterCount(for: widerRequest) == 1
                && store.fetchRuns.waiterCount(for: url.cacheKey) == 1
        }
        let direct = try await hosts.fillTheCDN()
        defer { direct.forEach { $0.cancel() } }
        try await hosts.origin.release("origin")
        try await waitUntil {
            let asked = try await hosts.cdn.hits(for: path)
            return store.fetchSlots.waitingCount == 1 || asked == 1
        }
        let asked = try await hosts.cdn.hits().values.reduce(0, +)
        #expect(asked == ahead, "the CDN was asked for \(asked) images at once, its \(ahead) fetch slots all held")
        try await hosts.cdn.release("never")
        try await hosts.cdn.release("later")
        try await waitUntil { !widths.withLock { $0 }.isEmpty }
        #expect(widths.withLock { $0 } == [100])
        for load in direct { _ = try? await load.value }
        try await waitUntil {
            store.fetchSlots.busyCount == 0 && store.fetchSlots.waitingCount == 0 && store.fetchSlots.sourceCount == 0
        }
    }

    @Test func aStoreLetGoWhileItsLoadWaitsForTheSlotOfTheHostItIsRedirectedToEndsWithItsLoads() async throws {
        // The app lets the store go while a load redirected to a CDN waits for one of its slots. The loads
        // keep the store until they end: the waiting one ends at once when cancelled, though every slot of
        // the CDN is still held, and asks the CDN nothing; once the others end too, the store, its loader
        // and every slot are gone.
        let folder = TemporaryDirectory("let-go")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let origin = try await TestHTTPServer(serving: folder.url)
        let cdn = try await TestHTTPServer(serving: folder.url)
        defer { [origin, cdn].forEach { $0.stop() } }
        let released = References()
        let slots: FetchSlots
        let stalled: [Task<PlatformImage, any Error>]
        let waiting: Task<PlatformImage, any Error>
        let target = "/alias/100/images/\(names[0])"
        do {
            let loader = DataLoader(timeout: 600)
            let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decodeConcurrency = 1
                $0.dataLoader = loader
            }
            released.watch(store, loader.http)
            slots = store.fetchSlots
            stalled = (0..<slots.limit).map { index in
                let request = ImageRequest(url: cdn.url("/held/never/alias/\(index)/images/\(names[0])"))
                return Task { try await store.image(for: request) }
            }
            try await waitUntil { slots.busyCount == slots.limit }
            let request = ImageRequest(url: origin.redirect(to: cdn.url(target)))
            waiting = Task { try await store.image(for: request) }
            try await waitUntil { slots.waitingCount == 1 && loader.http.unfinishedTaskCount == slots.limit + 1 }
        }
        defer { (stalled + [waiting]).forEach { $0.cancel() } }
        #expect(!released.areGone, "the loads keep the store")
        waiting.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await waiting.value }
        #expect(slots.busyCount == slots.limit && slots.waitingCount == 0)
        #expect(try await cdn.hits(for: target) == 0)
        stalled.forEach { $0.cancel() }
        for load in stalled { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
        try await waitUntil { released.areGone }
        #expect(slots.busyCount == 0 && slots.waitingCount == 0 && slots.sourceCount == 0)
    }

    @Test func aLoadWaitingForTheSlotOfTheHostItIsRedirectedToGoesOnOnceTheLoadsHoldingThemTimeOut() async throws {
        // The CDN's slots are held by loads of a CDN that never answers, and nobody cancels anything: they
        // end at their own timeout, and the load waiting for one of their slots goes on and loads then.
        // It waits as long as they hold the slots, as a load of the CDN's own URL waits for its first one.
        let folder = TemporaryDirectory("holders-time-out")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let origin = try await TestHTTPServer(serving: folder.url)
        let cdn = try await TestHTTPServer(serving: folder.url)
        defer { [origin, cdn].forEach { $0.stop() } }
        // 10 s: the redirected load must reach its wait before the first holder times out, on a machine
        // busy with the whole suite too (5 s left too little to spare there).
        let loader = DataLoader(timeout: 10)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeConcurrency = 1
            $0.dataLoader = loader
        }
        let ahead = store.fetchSlots.limit
        let stalled = (0..<ahead).map { index in
            let request = ImageRequest(url: cdn.url("/held/never/alias/\(index)/images/\(names[0])"))
            return Task { try await store.image(for: request) }
        }
        defer { stalled.forEach { $0.cancel() } }
        try await waitUntil { store.fetchSlots.busyCount == ahead }
        let waiting = Task {
            try await store.image(for: ImageRequest(url: origin.redirect(to: cdn.url("/images/\(names[0])"))))
        }
        defer { waiting.cancel() }
        try await waitUntil { store.fetchSlots.waitingCount == 1 || store.statistics.failures > 0 }
        try #require(store.statistics.failures == 0, "the load waits before the first holder times out")
        #expect(try await waiting.value.pixelSize == PixelSize(width: 200, height: 100))
        stalled.forEach { $0.cancel() }
        var timedOut = 0
        for load in stalled {
            do {
                _ = try await load.value
            } catch ImageLoadingError.timedOut {
                timedOut += 1
            } catch {}
        }
        #expect(timedOut > 0, "the holders ended at their timeout, nobody cancelled them, before it loaded")
        try await waitUntil { store.fetchSlots.busyCount == 0 && store.fetchSlots.sourceCount == 0 }
    }
}

extension ImageStoreRedirectSchedulingTests.OriginAndCDN {
    /// Starts a visible load, 50 wide, of an image of the origin that redirects to the CDN's `path` once
    /// the test releases `origin`, and waits until its download is under way, holding one of the origin's
    /// fetch slots.
    fileprivate func startLoadHeldAtTheOrigin(
        redirectingTo path: String
    ) async throws -> (url: URL, first: Task<PlatformImage, any Error>) {
        let redirect = origin.redirect(to: cdn.url(path)).absoluteString
        let url = URL(string: redirect.replacingOccurrences(of: "/redirect-to/", with: "/held/origin/redirect-to/"))!
        let (store, loader) = (store, loader)
        let first = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 50)) }
        try await waitUntil { loader.http.unfinishedTaskCount == 1 && store.fetchSlots.busyCount == 1 }
        return (url, first)
    }

    /// Starts as many loads of the CDN's own images as it has fetch slots, answered once the test releases
    /// `never`, and waits until the CDN has been asked for each of them.
    fileprivate func fillTheCDN() async throws -> [Task<PlatformImage, any Error>] {
        let (store, ahead) = (store, store.fetchSlots.limit)
        let loads = (0..<ahead).map { index in
            let request = ImageRequest(url: cdn.url("/held/never/alias/\(index)/images/\(names[0])"))
            return Task { try await store.image(for: request) }
        }
        try await waitUntil { try await cdn.hits().values.reduce(0, +) == ahead }
        return loads
    }
}

/// Weak references to a store and its HTTP loader, read from any task.
private final class References: Sendable {
    private struct Watched {
        weak var store: ImageStore?
        weak var loader: HTTPDataLoader?
    }

    private let watched = LockedBox(Watched())

    func watch(_ store: ImageStore, _ loader: HTTPDataLoader) {
        watched.withLock { $0 = Watched(store: store, loader: loader) }
    }

    /// Whether both have been freed.
    var areGone: Bool { watched.withLock { $0.store == nil && $0.loader == nil } }
}
