import Foundation
import Testing

@testable import AsyncImageCache

/// A decode already running stops part way once every load waiting for it is cancelled (a flung list
/// stops paying for rows gone by), and only then; the bytes it read stay good.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreDecodeCancellationTests {
    /// Made once, from a small gradient scaled up (drawing 24 megapixels pixel by pixel takes long in a
    /// debug build).
    static let largeJPEG = try! ImageEncoders.JPEG(quality: 85).encode(
        SampleImages.gradient(width: 600, height: 400).resized(to: PixelSize(width: 6000, height: 4000)))
    static let largePNG = try! ImageEncoders.PNG().encode(
        SampleImages.gradient(width: 300, height: 200).resized(to: PixelSize(width: 3000, height: 2000)))
    /// Detailed, so that its lossy file is large (a smooth picture would be a few chunks).
    static let largeWebP = SampleImages.webp(SampleImages.detailed(width: 3000, height: 2000))

    /// A large JPEG and PNG on the test server, and a store whose decodes a ``RowGate`` watches.
    struct Fixture {
        let folder = TemporaryDirectory("images")
        let server: TestHTTPServer
        let gate: RowGate
        let store: ImageStore

        init() async throws {
            let gate = RowGate()
            self.gate = gate
            try ImageStoreDecodeCancellationTests.largeJPEG.write(to: folder.url.appendingPathComponent("large.jpg"))
            try ImageStoreDecodeCancellationTests.largePNG.write(to: folder.url.appendingPathComponent("large.png"))
            try ImageStoreDecodeCancellationTests.largeWebP.write(to: folder.url.appendingPathComponent("large.webp"))
            server = try await TestHTTPServer(serving: folder.url)
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decodeRowObserver = gate.observer
            }
        }

        /// Loads `request` for each of `count` waiters, parks the decode part way through its rows, cancels
        /// every waiter (each gets `.cancelled` at once), lets the decode go on and waits until it is over.
        func cancelEveryWaiterMidDecode(_ request: ImageRequest, waiters count: Int) async throws {
            gate.arm()
            let waiters = (0..<count).map { _ in Task { [store] in try await store.image(for: request) } }
            try await waitUntil { gate.parkedCount == 1 }
            waiters.forEach { $0.cancel() }
            for waiter in waiters {
                await #expect(throws: ImageLoadingError.cancelled) { try await waiter.value }
            }
            gate.open()
            try await waitUntil { store.decodeSlots.busyCount == 0 }
        }
    }

    /// A 6000x4000 JPEG shown 1000 wide decodes at 1/4 scale, 1000 rows resized as they come; a 3000x2000
    /// PNG shown 600 wide streams its 2000 rows through the resize, and shown at its own width decodes them
    /// whole; a 3000x2000 WebP shown 600 wide decodes to cover three times that, 1800x1200, handed to libwebp
    /// a chunk at a time.
    @Test(arguments: [
        ("large.jpg", 1000, 1000), ("large.png", 600, 2000), ("large.png", 3000, 2000), ("large.webp", 600, 1200),
    ])
    func aDecodeStopsPartWayWhenEveryWaiterIsCancelled(name: String, width: Int, totalRows: Int) async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let request = ImageRequest(url: fixture.server.url("/images/\(name)"), targetWidth: CGFloat(width))
        try await fixture.cancelEveryWaiterMidDecode(request, waiters: 2)
        let (rows, total) = fixture.gate.rowsDecoded
        #expect(total == totalRows)
        #expect(rows < total, "the decode went on to row \(rows) of \(total) with nobody waiting")
        #expect(fixture.store.cachedImage(for: request)?.pixelSize == nil)
        #expect(fixture.store.statistics.failures == 0)
    }

    @Test func aRunCancelledBeforeItsDecodeStartsIsNeitherCountedNorReportedAsADecode() throws {
        // Cancelled between getting a decode slot and starting: the statistics and the stage observer
        // count decodes that started, so this is not one (it was counted before the check).
        let folder = TemporaryDirectory("cancelled-first")
        let log = StageLog()
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.stageObserver = log.observer }
        let data = try SampleImages.jpeg(width: 64, height: 48)
        let original = OriginalImage(data: data, header: try ImageHeader.parse(data), fileStamp: nil)
        let request = ImageRequest(url: URL(string: "https://example.com/a.jpg")!, targetWidth: 32)
        let cancellation = DecodeCancellation()
        cancellation.cancel()
        #expect(throws: ImageDecodingError.self) {
            try store.render(original, for: request, cancellation: cancellation)
        }
        #expect(store.statistics.decodes == 0)
        #expect(log.urls(of: .decode).isEmpty)
        // The same render not cancelled counts one decode and reports it.
        _ = try store.render(original, for: request, cancellation: DecodeCancellation())
        #expect(store.statistics.decodes == 1)
        #expect(log.urls(of: .decode) == [request.url])
    }

    @Test func aWaiterThatStaysGetsTheWholeImageWhenAnotherLeavesMidDecode() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let request = ImageRequest(url: fixture.server.url("/images/large.jpg"), targetWidth: 1000)
        let store = fixture.store
        fixture.gate.arm()
        let leaving = Task { try await store.image(for: request) }
        let staying = Task { try await store.image(for: request) }
        // Both wait for the decode before one leaves: a Task's first turn may come after the other's decode
        // parked, and the staying load would then run a decode of its own, testing nothing.
        try await waitUntil { fixture.gate.parkedCount == 1 && store.variantRuns.waiterCount(for: request) == 2 }
        leaving.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await leaving.value }
        fixture.gate.open()
        #expect(try await staying.value.pixelSize == PixelSize(width: 1000, height: 667))
        let (rows, total) = fixture.gate.rowsDecoded
        #expect(rows == total)
        #expect(fixture.store.cachedImage(for: request)?.pixelSize == PixelSize(width: 1000, height: 667))
    }

    /// A decode of bytes from the disk tier, stopped part way, is not taken for damage: the file stays
    /// with its size attribute, and the next load decodes it afresh without going to the server.
    @Test func theNextLoadAfterACancelledDecodeSucceedsFromTheIntactDiskEntry() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/images/large.jpg")
        let store = fixture.store
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 1000))
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == Self.largeJPEG)
        store.clearMemory()

        let request = ImageRequest(url: url, targetWidth: 800)
        try await fixture.cancelEveryWaiterMidDecode(request, waiters: 1)
        let (rows, total) = fixture.gate.rowsDecoded
        #expect(rows < total, "the decode went on to row \(rows) of \(total) with nobody waiting")
        #expect(store.cachedImage(for: request)?.pixelSize == nil)
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == Self.largeJPEG)
        #expect(store.disk.pixelSize(for: url) == PixelSize(width: 6000, height: 4000))
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 6000, height: 4000))

        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 800, height: 533))
        store.waitForDiskMaintenance()
        #expect(try await fixture.server.hits(for: "/images/large.jpg") == 1)
        #expect(store.disk.data(for: url) == Self.largeJPEG)
        #expect(store.statistics.failures == 0)
    }

    /// Bytes fresh from the server whose first decode was stopped are not downloaded again: the next
    /// load decodes them, and then they are kept on disk as any decoded download is.
    @Test func aDownloadWhoseDecodeWasStoppedIsNotDownloadedAgain() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/images/large.jpg")
        let store = fixture.store
        let request = ImageRequest(url: url, targetWidth: 1000)
        try await fixture.cancelEveryWaiterMidDecode(request, waiters: 1)
        #expect(store.cachedImage(for: request) == nil)
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == nil, "bytes that never decoded went to disk")

        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 1000, height: 667))
        // Before: 2, the image was downloaded again.
        #expect(try await fixture.server.hits(for: "/images/large.jpg") == 1)
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == Self.largeJPEG)
        #expect(store.disk.pixelSize(for: url) == PixelSize(width: 6000, height: 4000))
        #expect(store.statistics.failures == 0)
    }

    /// A download whose decode never started, cancelled while it waited for a decode slot, is held as one
    /// stopped part way is: the next load decodes it without asking the server again.
    @Test func aDownloadCancelledWhileWaitingForADecodeSlotIsNotDownloadedAgain() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let store = try ImageStore.makeForTesting(root: fixture.folder.url.appendingPathComponent("one-slot")) {
            $0.decodeConcurrency = 1
            $0.decodeRowObserver = fixture.gate.observer
        }
        let busy = ImageRequest(url: fixture.server.url("/images/large.jpg"), targetWidth: 1000)
        let request = ImageRequest(url: fixture.server.url("/images/large.png"), targetWidth: 600)
        fixture.gate.arm()
        let occupying = Task { try await store.image(for: busy) }
        try await waitUntil { fixture.gate.parkedCount == 1 }
        let waiting = Task { try await store.image(for: request) }
        // Downloaded, and waiting for the one slot the parked decode holds.
        try await waitUntil { store.decodeSlots.waitingCount == 1 }
        #expect(try await fixture.server.hits(for: "/images/large.png") == 1)
        waiting.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await waiting.value }
        fixture.gate.open()
        _ = try await occupying.value

        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 600, height: 400))
        // Before: 2, the image was downloaded again.
        #expect(try await fixture.server.hits(for: "/images/large.png") == 1)
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: request.url) == Self.largePNG)
        #expect(store.statistics.failures == 0)
    }

    /// Held bytes age from their response, not from the load that decodes them later: once kept, their
    /// `max-age` runs from when they arrived, so bytes held for a while are not kept fresh for longer
    /// than the server said.
    @Test func heldBytesStayFreshOnlyForTheirLifetimeFromTheirResponse() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-plain/max-age=600/images/large.jpg"
        let url = fixture.server.url(path)
        let store = fixture.store
        let request = ImageRequest(url: url, targetWidth: 1000)
        try await fixture.cancelEveryWaiterMidDecode(request, waiters: 1)
        // The response arrived before this; the decode that keeps the bytes starts after it.
        let heldSince = Date()
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 1000, height: 667))
        #expect(try await fixture.server.hits(for: path) == 1)
        store.waitForDiskMaintenance()
        let latest = heldSince.addingTimeInterval(600)
        let inMemory = try #require(store.cacheMetadata.value(forKey: url.cacheKey)?.expires)
        let onDisk = try #require(store.disk.cacheMetadata(for: url)?.expires)
        #expect(inMemory < latest, "fresh until \(inMemory.timeIntervalSince(heldSince)) s after the bytes were held")
        // Whole seconds on disk, rounded down.
        #expect(
            onDisk <= latest, "fresh on disk until \(onDisk.timeIntervalSince(heldSince)) s after the bytes were held")
    }

    /// Held bytes that went stale while they waited are shown, as a stale entry from memory or disk is, and
    /// asked for again at the load that shows them. Before, that load kept them without asking (stale on
    /// disk, in memory), and only the load after it revalidated: a stale image shown one load too many.
    @Test func heldBytesThatWentStaleAreRevalidatedByTheLoadThatShowsThem() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache/max-age=1/images/large.jpg"
        let url = fixture.server.url(path)
        let store = fixture.store
        let request = ImageRequest(url: url, targetWidth: 1000)
        try await fixture.cancelEveryWaiterMidDecode(request, waiters: 1)
        try await Task.sleep(for: .milliseconds(2100))  // past the max-age, held all the while
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 1000, height: 667))
        // Kept (the file is written in the background; the check below may already have refreshed it).
        store.waitForDiskMaintenance()
        #expect(store.disk.contains(url))
        // Room for the background check, then the server's tally.
        try await Task.sleep(for: .milliseconds(500))
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        let statuses = try await fixture.server.statuses(for: path)
        #expect(statuses == [200, 304], "stale held bytes kept without asking: \(statuses)")
    }

    /// Held bytes that then fail to decode are let go, as bytes that fail at their first decode are: the
    /// next load asks the server again (it may have been fixed).
    @Test func heldBytesThatFailToDecodeAreFetchedAgainByTheNextLoad() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        // Cut well past the rows the gate parks at: the first decode stops before it sees the end.
        try Self.largeJPEG.prefix(Self.largeJPEG.count * 6 / 10).write(
            to: fixture.folder.url.appendingPathComponent("cut.jpg"))
        let request = ImageRequest(url: fixture.server.url("/images/cut.jpg"), targetWidth: 1000)
        try await fixture.cancelEveryWaiterMidDecode(request, waiters: 1)
        for expectedHits in [1, 2] {
            await #expect(throws: ImageLoadingError.self) { try await fixture.store.image(for: request) }
            #expect(try await fixture.server.hits(for: "/images/cut.jpg") == expectedHits)
        }
        fixture.store.waitForDiskMaintenance()
        #expect(fixture.store.diskFileNames.isEmpty)
    }
}

extension ImageStoreDecodeCancellationTests {
    /// A custom decoder sees ``ImageDecodingContext/isCancelled`` once its last waiter leaves, not before;
    /// whatever it throws then (here `.corrupt`), the disk entry it read is not taken for damaged.
    @Test func aCustomDecoderSeesTheCancellationOnlyWhenEveryWaiterIsGone() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/images/large.jpg")
        let decoder = GatedDecoder(open: true, failsWhenCancelled: true)
        let store = try ImageStore.makeForTesting(root: fixture.folder.url.appendingPathComponent("custom")) {
            $0.decoder = decoder
        }
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        store.clearMemory()
        decoder.close()

        let request = ImageRequest(url: url, targetWidth: 120)
        let leaving = Task { try await store.image(for: request) }
        let staying = Task { try await store.image(for: request) }
        // Both wait for the decode before one leaves: a Task's first turn may run after the other's decode
        // started, and the only waiter leaving cancels it.
        try await waitUntil { decoder.enteredCount == 2 && store.variantRuns.waiterCount(for: request) == 2 }
        leaving.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await leaving.value }
        #expect(decoder.lastContext?.isCancelled == false, "cancelled while a waiter stays")
        staying.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await staying.value }
        #expect(decoder.lastContext?.isCancelled == true)
        decoder.open()
        try await waitUntil { store.decodeSlots.busyCount == 0 }
        #expect(decoder.cancellationsSeen == [false, true])
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == Self.largeJPEG)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 120, height: 80))
        #expect(decoder.cancellationsSeen == [false, true, false])
        #expect(try await fixture.server.hits(for: "/images/large.jpg") == 1)
    }
}
