import Foundation
import Testing

@testable import AsyncImageCache

/// HTTP semantics: Cache-Control decides what is stored and for how long, stale entries are shown
/// while they revalidate with their validators, a 304 refreshes without rewriting, changed bytes
/// replace the old image, and errors never replace a good one.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreHTTPCachingTests {
    struct Fixture {
        let folder = TemporaryDirectory("http-cache")
        let server: TestHTTPServer

        init(width: Int = 320, height: Int = 240) async throws {
            try SampleImages.jpeg(width: width, height: height).write(
                to: folder.url.appendingPathComponent("photo.jpg"))
            server = try await TestHTTPServer(serving: folder.url)
        }

        func store(
            name: String = "test", _ adjust: (inout ImageStore.Configuration) -> Void = { _ in }
        ) throws -> ImageStore {
            try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"), name: name, adjust)
        }

        func replacePhoto(width: Int, height: Int) throws {
            try SampleImages.jpeg(width: width, height: height, seed: 9).write(
                to: folder.url.appendingPathComponent("photo.jpg"))
            // Last-Modified has whole seconds: move the file's date clearly past the stored one.
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(60)],
                ofItemAtPath: folder.url.appendingPathComponent("photo.jpg").path)
        }
    }

    @Test func noStoreResponsesAreNeverWrittenToDisk() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let store = try fixture.store()
        let image = try await store.image(
            for: ImageRequest(url: fixture.server.url("/cache/no-store/images/photo.jpg"), targetWidth: 100))
        #expect(image.pixelSize.width == 100)
        #expect(store.diskFileNames.isEmpty)
    }

    @Test func aFreshEntryIsServedFromDiskWithoutAskingTheServer() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache/max-age=3600/images/photo.jpg"
        _ = try await fixture.store().image(for: ImageRequest(url: fixture.server.url(path), targetWidth: 100))
        let relaunched = try fixture.store()
        _ = try await relaunched.image(for: ImageRequest(url: fixture.server.url(path), targetWidth: 80))
        try await Task.sleep(for: .milliseconds(200))  // room for a (wrong) background request
        #expect(try await fixture.server.hits(for: path) == 1)
        #expect(relaunched.statistics.revalidations == 0)
    }

    @Test(arguments: ["/cache/no-cache/images/photo.jpg", "/cache-lm/no-cache/images/photo.jpg"])
    func aStaleEntryIsShownAndRevalidatedAndA304RefreshesItWithoutRewriting(path: String) async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url(path)
        let first = try fixture.store()
        _ = try await first.image(for: ImageRequest(url: url, targetWidth: 100))
        first.waitForDiskMaintenance()
        let relaunched = try fixture.store()
        let disk = relaunched.disk
        let file = disk.fileURL(for: url)
        let inodeBefore = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? Int
        // Stale: the size is known at once, and the stale bytes are shown.
        #expect(relaunched.cachedPixelSize(for: url) == CGSize(width: 320, height: 240))
        #expect(try await relaunched.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize.width == 100)
        try await waitUntil { try await fixture.server.statuses(for: path) == [200, 304] }
        try await waitUntil { relaunched.statistics.notModified == 1 }
        let inodeAfter = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? Int
        #expect(inodeBefore == inodeAfter)  // not rewritten
        #expect(disk.data(for: url) == (try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))))
        #expect(relaunched.cachedPixelSize(for: url) == CGSize(width: 320, height: 240))
    }

    /// A server with neither ETag nor Last-Modified answers every revalidation with the whole image.
    @Test func theSameBytesAgainKeepTheImagesAndTheFileAndRefreshTheLifetime() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-plain/no-cache/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        let request = ImageRequest(url: url, targetWidth: 100)
        _ = try await store.image(for: request)
        store.waitForDiskMaintenance()
        let file = store.disk.fileURL(for: url)
        let inodeBefore = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? Int
        let decodesBefore = store.statistics.decodes
        // Stale at once (no-cache): this hit revalidates, and the server sends the same bytes.
        _ = try await store.image(for: request)
        try await waitUntil { store.statistics.notModified == 1 }
        #expect(try await fixture.server.statuses(for: path) == [200, 200])
        // Before: the variants were dropped (a placeholder and a decode at the next appearance) and
        // the file written again.
        #expect(store.cachedImage(for: request) != nil)
        _ = try await store.image(for: request)
        #expect(store.statistics.decodes == decodesBefore)
        store.waitForDiskMaintenance()
        let inodeAfter = try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? Int
        #expect(inodeBefore == inodeAfter)
        #expect(
            store.disk.data(for: url) == (try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))))
    }

    /// Directives may change while the bytes do not: the same bytes again are kept on disk, or not, as
    /// the new response allows, as changed bytes would be; the images in memory stay either way.
    @Test(arguments: [("no-cache", "no-store"), ("no-store,no-cache", "max-age=3600")])
    func theSameBytesAgainAreKeptOnDiskAsTheNewResponseAllows(first: String, then: String) async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-plain-then/\(first)/\(then)/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        let request = ImageRequest(url: url, targetWidth: 100)
        _ = try await store.image(for: request)
        store.waitForDiskMaintenance()
        #expect(store.disk.contains(url) == !first.contains("no-store"))
        let decodesBefore = store.statistics.decodes
        // Stale at once (no-cache): this hit revalidates, and the server sends the same bytes.
        _ = try await store.image(for: request)
        try await waitUntil { store.statistics.notModified == 1 }
        store.waitForDiskMaintenance()
        #expect(try await fixture.server.statuses(for: path) == [200, 200])
        // Before: a no-store answer left the file of the first response on disk, and a storable one
        // after a no-store one wrote nothing, so the next launch downloaded the image again.
        #expect(store.disk.contains(url) == !then.contains("no-store"))
        #expect(store.cachedImage(for: request) != nil)
        #expect(store.statistics.decodes == decodesBefore)
    }

    /// A 304 that says no-store takes the file away, as the same bytes again with no-store do; the image
    /// in memory stays (before: the file stayed on disk, with fresh metadata).
    @Test func aNotModifiedAnswerThatSaysNoStoreRemovesTheFile() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-then/no-cache/no-cache,no-store/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        let request = ImageRequest(url: url, targetWidth: 100)
        _ = try await store.image(for: request)
        store.waitForDiskMaintenance()
        #expect(store.disk.contains(url))
        // Stale at once (no-cache): this hit revalidates, and the server answers 304 with no-store.
        _ = try await store.image(for: request)
        try await waitUntil { store.statistics.notModified == 1 }
        store.waitForDiskMaintenance()
        #expect(try await fixture.server.statuses(for: path) == [200, 304])
        #expect(!store.disk.contains(url))
        #expect(store.cachedImage(for: request) != nil)
    }

    @Test func aResponseACDNHasKeptForItsWholeMaxAgeIsStaleAndRevalidatedAfterRelaunch() async throws {
        // RFC 9111 4.2.3: Age says how long caches on the way have kept the response already.
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let partly = fixture.server.url("/cache-age/3000/max-age=3600/images/photo.jpg")
        let store = try fixture.store()
        let start = Date()
        _ = try await store.image(for: ImageRequest(url: partly, targetWidth: 100))
        store.waitForDiskMaintenance()
        let partlyKept = store.disk.cacheMetadata(for: partly)
        #expect(partlyKept?.expires(after: 600, receivedBetween: start, and: Date()) == true)
        #expect(partlyKept?.cacheControlLifetime == 3600)
        let path = "/cache-age/3600/max-age=3600/images/photo.jpg"
        let url = fixture.server.url(path)
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        try #require(store.disk.cacheMetadata(for: url)?.isStale() == true, "kept fresh for another hour")
        let relaunched = try fixture.store()
        _ = try await relaunched.image(for: ImageRequest(url: url, targetWidth: 80))
        try await waitUntil { try await fixture.server.statuses(for: path) == [200, 304] }
    }

    @Test func expiresWithoutMaxAgeSetsTheLifetimeAndAnInvalidOrPastOneIsStale() async throws {
        // RFC 9111 4.2.1 and 5.3: Expires less Date; "0" or a date in the past means already stale.
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let store = try fixture.store()
        let hour = fixture.server.url("/cache-expires/+3600/images/photo.jpg")
        let start = Date()
        _ = try await store.image(for: ImageRequest(url: hour, targetWidth: 100))
        store.waitForDiskMaintenance()
        let expires = try #require(store.disk.cacheMetadata(for: hour)?.expires, "no lifetime from Expires")
        #expect(expires > start.addingTimeInterval(3590) && expires <= Date().addingTimeInterval(3600))
        for when in ["0", "-60"] {
            let url = fixture.server.url("/cache-expires/\(when)/images/photo.jpg")
            _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
            store.waitForDiskMaintenance()
            #expect(store.disk.cacheMetadata(for: url)?.isStale() == true, "Expires: \(when) kept fresh")
        }
    }

    @Test func a304WithoutCacheControlKeepsTheStoredLifetime() async throws {
        // RFC 9111 4.3.4: a 304 updates only the headers it carries; before, a bare one left the
        // entry fresh forever, never revalidated again.
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-bare304/max-age=1/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        #expect(store.disk.cacheMetadata(for: url)?.cacheControlLifetime == 1)
        try await Task.sleep(for: .milliseconds(1100))  // stale now
        let before = Date()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 80))
        try await waitUntil { try await fixture.server.statuses(for: path) == [200, 304] }
        try await waitUntil { store.statistics.notModified == 1 }
        let after = Date()
        // Fresh again for the stored second from the 304 (kept on disk in whole seconds, rounded
        // down), on disk as in memory, and stale after it.
        for metadata in [store.disk.cacheMetadata(for: url), store.storedCacheMetadata(for: url)] {
            let expires = try #require(metadata?.expires)
            #expect(expires >= before.addingTimeInterval(-0.001) && expires <= after.addingTimeInterval(1))
            #expect(metadata?.cacheControlLifetime == 1)
            #expect(metadata?.isStale(at: after.addingTimeInterval(1)) == true)
        }
    }

    /// Bytes that `cachedOriginalBytes(for:)` brought from disk into memory keep their caching facts
    /// once the file is gone (trimmed, or purged by the system): a load served them from memory, took
    /// them for fresh until evicted and never asked the server again, whose image had changed.
    @Test func bytesCopiedFromDiskAreRevalidatedAfterTheirFileIsGone() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/cache/no-cache/images/photo.jpg")
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        store.clearMemory()  // a memory warning
        #expect(store.cachedOriginalBytes(for: url)?.pixelSize == CGSize(width: 320, height: 240))
        try FileManager.default.removeItem(at: store.disk.fileURL(for: url))
        try fixture.replacePhoto(width: 200, height: 200)

        // Stale (no-cache): served from memory while it revalidates.
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        #expect(store.statistics.revalidations == 1, "the stale bytes were taken for fresh")
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize
                == PixelSize(width: 100, height: 100))
    }

    /// The same for bytes a load read from disk and kept when its decode ended after a `clearMemory()`
    /// (a memory warning) had emptied the caching facts that came into memory with them: once the file
    /// was gone, later loads served them from memory as fresh and never asked the server again.
    @Test func bytesALoadKeepsAfterAClearMemoryAreRevalidatedAfterTheirFileIsGone() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/cache/no-cache/images/photo.jpg")
        let decoder = GatedDecoder(open: true)
        let store = try fixture.store { $0.decoder = decoder }
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        store.clearMemory()

        // A load from the disk tier, its decode held; the entry is stale (no-cache), so the read also
        // revalidates it: a 304, which finishes while the decode waits.
        decoder.close()
        let load = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 50)) }
        try await waitUntil { decoder.enteredCount == 2 }
        try await waitUntil { store.statistics.notModified == 1 && store.revalidating.withLock { $0.isEmpty } }
        store.clearMemory()  // a memory warning while it decodes
        decoder.open()
        _ = try await load.value
        #expect(store.originals.contains(url.cacheKey), "the load kept the bytes it read from disk")

        try FileManager.default.removeItem(at: store.disk.fileURL(for: url))
        try fixture.replacePhoto(width: 200, height: 200)
        // Stale (no-cache): served from memory while it revalidates.
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 40))
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        #expect(store.statistics.revalidations == 2, "the stale bytes were taken for fresh")
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
    }

    /// Bytes kept in memory without a file (a no-store image) whose caching facts memory has let go of
    /// (its facts are bounded: here by 150 other URLs with 60 KB entity tags): with no attribute on disk
    /// either, they were taken for fresh until evicted, and never asked for again. Now they are stale: the
    /// next load shows them and asks the server, whose answer records facts again; a server that is gone
    /// is asked once, not at every load (the facts found are remembered, with their retry delay).
    @Test(arguments: [false, true])
    func bytesInMemoryWhoseFactsAreEvictedAndWhoHaveNoFileAreRevalidated(serverIsGone: Bool) async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        try SampleImages.jpeg(width: 16, height: 16).write(to: fixture.folder.url.appendingPathComponent("dot.jpg"))
        let path = "/cache/no-store/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store { $0.memoryCountLimit = 1000 }  // the image stays in memory
        let request = ImageRequest(url: url, targetWidth: 100)
        _ = try await store.image(for: request)
        for index in 0..<150 {
            let other = fixture.server.url("/long-etag/60000/u\(index)/images/dot.jpg")
            _ = try await store.image(for: ImageRequest(url: other, targetWidth: 8))
        }
        store.waitForDiskMaintenance()
        try #require(!store.cacheMetadata.contains(url.cacheKey), "the facts are still in memory")
        try #require(store.originals.contains(url.cacheKey) && store.cachedImage(for: request) != nil)
        #expect(!store.disk.contains(url))

        if serverIsGone {
            fixture.server.stop()
            for width in [100, 80, 60] as [CGFloat] {
                _ = try await store.image(for: ImageRequest(url: url, targetWidth: width))
                try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
            }
            #expect(store.statistics.revalidations == 1, "asked \(store.statistics.revalidations) times")
            return
        }
        try fixture.replacePhoto(width: 200, height: 200)
        // Shown from memory at once, and asked for again.
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 75))
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        #expect(store.statistics.revalidations == 1, "the bytes without facts were taken for fresh")
        #expect(try await fixture.server.hits(for: path) == 2)
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
        #expect(store.storedCacheMetadata(for: url)?.isStorable == false)
        store.waitForDiskMaintenance()
        #expect(!store.disk.contains(url))
    }

    /// Two loads that find the facts of bytes without a file gone (two widths of a `no-store` image shown
    /// at once) both look them up: each keeps the stale facts that stand for them, and the one whose check
    /// runs starts it with its own. A failed check records its retry delay only over the facts it started
    /// with; made with the time of each look-up, the second load's differed, so the delay was dropped and
    /// the next load asked the server that had just failed again at once. Played here step by step: the
    /// first load's look-up, the second's (which missed too), then the first load's check, failing.
    @Test func aFailedCheckOfBytesWithoutFactsOrFileKeepsItsDelayWhenTwoLoadsLookedThemUp() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache/no-store/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        try #require(!store.disk.contains(url))
        fixture.server.stop()
        store.cacheMetadata.removeValue(forKey: url.cacheKey)  // let go of, as by 150 long entity tags
        let first = try #require(store.storedCacheMetadata(for: url))
        store.cacheMetadata.removeValue(forKey: url.cacheKey)  // the second load looked before the first kept them
        let second = try #require(store.storedCacheMetadata(for: url))
        #expect(first.isStale() && second.isStale())
        await store.revalidate(url, metadata: first)
        let after = try #require(store.storedCacheMetadata(for: url))
        #expect(after.failedRevalidations == 1, "the failed check recorded no delay")
        #expect(!after.needsRevalidation(), "the next load asks the server again at once")
    }

    /// A response that varies on `*` matches no later request (RFC 9111 4.1): shown from the cache, but
    /// asked for again at every load, in this process and after a relaunch. It was fresh for its hour.
    @Test func aResponseThatVariesOnStarIsAskedForAgainAtEveryLoad() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-fields/Cache-Control=max-age=3600;Vary=*/-/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 80))
        try await waitUntil { try await fixture.server.statuses(for: path) == [200, 304] }
        _ = try await fixture.store().image(for: ImageRequest(url: url, targetWidth: 60))  // relaunched
        try await waitUntil { try await fixture.server.statuses(for: path) == [200, 304, 304] }
    }

    /// A response with `Pragma: no-cache` and no `Cache-Control` (an older server's way to say no-cache) is
    /// revalidated at every load, as browsers treat it (Chromium and Firefox make it stale at once):
    /// before, without a lifetime, it was fresh until evicted, and a changed image never showed.
    @Test func aPragmaNoCacheWithoutCacheControlIsAskedForAgainAtEveryLoad() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-fields/Pragma=no-cache/-/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        try #require(store.disk.cacheMetadata(for: url)?.isStale() == true, "fresh until evicted")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 80))
        try await waitUntil { try await fixture.server.statuses(for: path) == [200, 304] }
        // A Cache-Control beside it decides, as it does beside a request's Pragma (RFC 7234 5.4).
        #expect(
            HTTPCachePolicyTests.policy(headers: ["Pragma": "no-cache", "Cache-Control": "max-age=60"]).maxAge == 60)
        #expect(
            HTTPCachePolicyTests.policy(headers: ["Pragma": "No-Cache", "Expires": "Thu, 01 Jan 2099 00:00:00 GMT"])
                .maxAge == 0)
    }

    /// A `no-store` image is kept in memory to show, but stale at once (RFC 9111 5.2.2.5): the next load
    /// shows it and asks the server, and a changed image replaces it. Before, it was fresh until evicted:
    /// a webcam still or a generated avatar never changed while it stayed in memory.
    @Test func aNoStoreImageIsAskedForAgainAtTheNextLoad() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-plain/no-store/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize
                == PixelSize(width: 100, height: 75))
        try fixture.replacePhoto(width: 200, height: 200)
        // Shown from memory at once, and asked for again.
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize
                == PixelSize(width: 100, height: 75))
        try await waitUntil { store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200) }
        #expect(try await fixture.server.hits(for: path) == 2)
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize
                == PixelSize(width: 100, height: 100))
        #expect(store.diskFileNames.isEmpty)
    }

    /// A custom loader's `no-store` (`HTTPCachePolicy(isStorable: false)`, or `isStorable` set to `false`) is
    /// what the header's is, as ``HTTPCachePolicy/isStorable`` says: the image is kept in memory to show,
    /// stale at once, and asked for again at the next load. Before, such a policy had no lifetime: its
    /// `maxAge` was `nil`, not `0`, and the image stayed fresh in memory until evicted, never asked again.
    @Test(arguments: [false, true])
    func aCustomLoadersNoStoreIsAskedForAgainAtTheNextLoad(setAfterwards: Bool) async throws {
        let folder = TemporaryDirectory("custom-no-store")
        var policy = HTTPCachePolicy(isStorable: setAfterwards, maxAge: setAfterwards ? 3600 : nil)
        if setAfterwards { policy.isStorable = false }
        #expect(policy.maxAge == 0)
        let loader = FixedPolicyLoader(bytes: try SampleImages.jpeg(width: 64, height: 48), policy: policy)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        let url = URL(string: "https://images.example.com/webcam.jpg")!
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 32))
        try #require(store.storedCacheMetadata(for: url)?.isStale() == true, "a no-store image is fresh in memory")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 32))
        try await waitUntil { loader.loads == 2 && store.statistics.revalidations == 1 }
        store.waitForDiskMaintenance()
        #expect(store.diskFileNames.isEmpty)
    }

    /// Without a freshness lifetime in its headers, only a heuristically cacheable status (of the 2xx:
    /// 200, 203, 204, 206; RFC 9110 15.1) is kept as fresh until evicted (RFC 9111 4.2.2). A `202
    /// Accepted` placeholder served while an image is made was never asked for again, even after a relaunch.
    @Test(arguments: [
        (202, "-", true), (201, "-", true), (200, "-", false), (203, "-", false), (202, "max-age=3600", false),
    ])
    func aStatusThatMayNotBeKeptOnAGuessIsStaleWithoutALifetime(status: Int, directives: String, isStale: Bool)
        async throws
    {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-status/\(status)/\(directives)/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        #expect(store.storedCacheMetadata(for: url)?.isStale() == isStale)
        #expect(store.disk.cacheMetadata(for: url)?.isStale() == isStale)
        guard isStale else { return }
        _ = try await fixture.store().image(for: ImageRequest(url: url, targetWidth: 80))  // relaunched
        try await waitUntil { try await fixture.server.hits(for: path) == 2 }
    }

    /// A response is at least as old as its `Date` says (RFC 9111 4.2.3), less the second its whole
    /// seconds hide: made a day ago with `max-age=3600` and no `Age`, it is stale on arrival (before:
    /// fresh for an hour); made half an hour ago, fresh for the other half; dated in the future (a server
    /// clock ahead), fresh for the whole hour.
    @Test(arguments: [("-86400", nil), ("-1800", 1800), ("+86400", 3600)] as [(String, TimeInterval?)])
    func aResponsesAgeCountsFromItsDate(date: String, freshFor seconds: TimeInterval?) async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/cache-fields/Cache-Control=max-age=3600;Date=\(date)/-/images/photo.jpg")
        let store = try fixture.store()
        let before = Date()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        let after = Date()
        store.waitForDiskMaintenance()
        for metadata in [store.storedCacheMetadata(for: url), store.disk.cacheMetadata(for: url)] {
            let expires = try #require(metadata?.expires)
            guard let seconds else {
                #expect(expires <= after, "fresh for \(expires.timeIntervalSince(after).rounded()) s")
                continue
            }
            // Whole seconds in the Date, and on disk: within two seconds.
            #expect(expires > before.addingTimeInterval(seconds - 2) && expires < after.addingTimeInterval(seconds + 2))
        }
    }

    /// The redirect's Cache-Control, and the lifetime the stored bytes get when it leads to an image
    /// that may be kept a year.
    @Test(
        arguments: [
            (302, "no-cache", 0), (302, "no-store", 0), (302, "-", 0), (303, "-", 0), (307, "-", 0),
            (302, "max-age=60", 60), (307, "max-age=60,no-cache", 0), (301, "-", 31_536_000),
            (308, "max-age=120", 120),
        ] as [(Int, String, TimeInterval)])
    func theImageARedirectLeadsToIsFreshNoLongerThanTheRedirect(
        code: Int, directives: String, lifetime: TimeInterval
    ) async throws {
        // RFC 9111 4.2.2: a 302, 303 or 307 that gives no freshness may not be kept on a guess. Before,
        // each of these was stored fresh for the final response's year.
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let final = "/cache/max-age=31536000/images/photo.jpg"
        let url = fixture.server.url("/redirect-cache/\(code)/\(directives)\(final)")
        let store = try fixture.store()
        let start = Date()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        let end = Date()
        for metadata in [store.disk.cacheMetadata(for: url), store.storedCacheMetadata(for: url)] {
            #expect(metadata?.expires(after: lifetime, receivedBetween: start, and: end) == true)
        }
        guard lifetime == 0 else { return }
        // Stale: shown again at once, and revalidated through the redirect with the image's validators.
        let relaunched = try fixture.store()
        #expect(try await relaunched.image(for: ImageRequest(url: url, targetWidth: 80)).pixelSize.width == 80)
        try await waitUntil { try await fixture.server.statuses(for: final) == [200, 304] }
        try await waitUntil { relaunched.statistics.notModified == 1 }
        #expect(relaunched.disk.cacheMetadata(for: url)?.isStale() == true)
    }

    @Test func ofAChainOfRedirectsTheShortestLifetimeCounts() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let store = try fixture.store()
        for (path, lifetime) in [
            ("/redirect-cache/301/-/redirect-cache/302/max-age=60/redirect-cache/308/max-age=90", 60.0),
            ("/redirect-cache/308/max-age=90/redirect-cache/301/max-age=30", 30),
        ] {
            let url = fixture.server.url(path + "/cache/max-age=3600/images/photo.jpg")
            let start = Date()
            _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
            store.waitForDiskMaintenance()
            let metadata = store.disk.cacheMetadata(for: url)
            #expect(metadata?.expires(after: lifetime, receivedBetween: start, and: Date()) == true, "\(path)")
        }
    }

    @Test func aFailedRevalidationKeepsTheStaleImage() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache/no-cache/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        let original = try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))
        // The server now sends an HTML page under the same name: it must not replace the image.
        try Data("<html>moved</html>".utf8).write(to: fixture.folder.url.appendingPathComponent("photo.jpg"))
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        try await waitUntil { try await fixture.server.statuses(for: path).count == 2 }
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        #expect(store.cachedOriginalBytes(for: url)?.data == original)
        #expect(store.disk.data(for: url) == original)
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize
                == PixelSize(width: 100, height: 75))
    }

    @Test func aServersHugeMaxAgeIsKeptAs68YearsNotATrap() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let store = try fixture.store()
        let url = fixture.server.url("/cache/max-age=99999999999999999999/images/photo.jpg")
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        #expect(image.pixelSize.width == 100)
        // Written to disk, with its expiry 2^31 seconds from now.
        let metadata = try #require(store.disk.cacheMetadata(for: url))
        let lifetime = try #require(metadata.expires).timeIntervalSinceNow
        #expect(lifetime > 2_147_483_648 - 60 && lifetime <= 2_147_483_648)
    }
}

/// A loader that answers every load with the same bytes and policy, and counts its loads.
private final class FixedPolicyLoader: DataLoading, @unchecked Sendable {
    // `count` is only touched while holding `lock`.
    private let lock = NSLock()
    private var count = 0
    private let bytes: Data
    private let policy: HTTPCachePolicy

    init(bytes: Data, policy: HTTPCachePolicy) {
        self.bytes = bytes
        self.policy = policy
    }

    var loads: Int { lock.withLock { count } }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data { bytes }

    func loadData(
        for url: URL, revalidating validators: HTTPCachePolicy?
    ) async throws(ImageLoadingError) -> ConditionalLoadResult {
        lock.withLock { count += 1 }
        return .modified(bytes, policy)
    }
}
