import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import AsyncImageCache

/// A wider load taking over another width's download: the bytes are downloaded once, kept when they land
/// before it joins, and not dropped when another download's decode fails.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreTakeoverTests {
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

    @Test func aDownloadThatLandedJustBeforeTheTakeoverIsNotDownloadedAgain() async throws {
        // The narrow row's download has landed, its fetch has ended and left the table of fetches in flight,
        // but its run has not yet recorded the bytes for the other widths (held there by a test hook) when a
        // wider load replaces it. The wider load decodes those bytes. Before, it found them nowhere (not in a
        // fetch in flight, not among the bytes being decoded, not held) and downloaded the image again.
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 200, height: 100)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let gate = SuspendingGate()
        defer { gate.open() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.fetchedObserver = { _ in await gate.parkIfArmed() }
        }
        let path = "/images/\(names[0])"
        let url = server.url(path)
        gate.arm()
        let narrow = store.load(ImageRequest(url: url, targetWidth: 50)) { _ in }
        try await waitUntil { gate.parkedCount == 1 && store.fetchRuns.count == 0 }
        let widths = LockedBox([Int?]())
        let wider = store.load(ImageRequest(url: url, targetWidth: 100), replacing: narrow) { image in
            widths.withLock { $0.append(image?.pixelSize.width) }
        }
        defer { wider.cancel() }
        await wider.ended()
        gate.open()
        await narrow.ended()
        #expect(widths.withLock { $0 } == [100])
        let downloads = try await server.hits(for: path)
        #expect(downloads == 1, "the image taken over was downloaded \(downloads) times")
    }

}
