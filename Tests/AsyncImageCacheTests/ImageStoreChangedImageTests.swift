import Foundation
import Testing

@testable import AsyncImageCache

private typealias Fixture = ImageStoreHTTPCachingTests.Fixture

/// A changed image found by a revalidation replaces the old one in both tiers in one step: nothing old
/// (bytes, size, decode) outlives it, and the new one is fresh for its own response's lifetime.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreChangedImageTests {
    @Test func aChangedImageReplacesTheOldOneInBothTiers() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache/no-cache/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        try fixture.replacePhoto(width: 200, height: 200)
        // The stale image is shown while the new one is fetched.
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize
                == PixelSize(width: 100, height: 75))
        try await waitUntil { store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200) }
        #expect(try await fixture.server.statuses(for: path) == [200, 200])
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize
                == PixelSize(width: 100, height: 100))
        let newBytes = try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))
        #expect(store.cachedOriginalBytes(for: url)?.data == newBytes)
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == newBytes)
        #expect(store.disk.pixelSize(for: url) == PixelSize(width: 200, height: 200))
    }

    /// The check decode of a changed image is a decode the store runs: `statistics.decodes` counted the
    /// decodes of loads only, so a revalidation's went unseen.
    @Test func aChangedImagesCheckDecodeCountsAsADecode() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/cache/no-cache/images/photo.jpg")
        let store = try fixture.store()
        let request = ImageRequest(url: url, targetWidth: 100)
        _ = try await store.image(for: request)
        #expect(store.statistics.decodes == 1)
        try fixture.replacePhoto(width: 200, height: 200)
        // Stale (no-cache): this hit, served from memory without a decode, revalidates.
        _ = try await store.image(for: request)
        try await waitUntil { store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200) }
        #expect(store.statistics.decodes == 2)
        // The new image's own decode at the next load.
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 100))
        #expect(store.statistics.decodes == 3)
    }

    /// A changed image's lifetime runs from its response, not from the end of the check decode that
    /// waits for a low-priority slot before it is kept.
    @Test func aChangedImageIsFreshForItsLifetimeFromItsResponse() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let decoder = GatedDecoder(open: true)
        let store = try fixture.store { $0.decoder = decoder }
        let url = fixture.server.url("/cache-plain-then/no-cache/max-age=600/images/photo.jpg")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        try fixture.replacePhoto(width: 200, height: 200)
        decoder.close()
        // Stale (no-cache): this hit revalidates; the new bytes come with max-age=600 and their check
        // decode parks at the gate.
        let asked = Date()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        try await waitUntil { decoder.enteredCount == 2 }
        let latest = Date()
        decoder.open()
        try await waitUntil { store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200) }
        // In memory: the disk attribute keeps whole seconds.
        let expires = try #require(store.cacheMetadata.value(forKey: url.cacheKey)?.expires)
        // Before: counted from after the gate opened, so later than `latest` + 600 s.
        #expect(expires <= latest.addingTimeInterval(600))
        // The response came after the revalidation was asked for (less a second: dates on the wire are
        // whole seconds). A bound from `latest` instead failed under ThreadSanitizer beside the whole
        // suite, where the check decode took more than 10 s to reach the gate.
        #expect(expires > asked.addingTimeInterval(599))
    }

    /// A decode of the old bytes, for another width, still running when a revalidation brings a new
    /// image: it delivers the old image to its caller, but keeps nothing of it once the new one is in.
    @Test func aDecodeOfTheOldBytesFinishingAfterAChangedImageKeepsNothingOld() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/cache/no-cache/images/photo.jpg")
        let gate = StageGate(.decode)
        let store = try fixture.store {
            $0.stageObserver = gate.observer
            $0.decodeConcurrency = 2  // the revalidation's check decodes while the old decode is parked
        }
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        try fixture.replacePhoto(width: 200, height: 200)
        let newBytes = try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))

        // Another width takes the old bytes from memory, starts the revalidation, and parks at its decode.
        gate.arm()
        let wider = ImageRequest(url: url, targetWidth: 160)
        let load = Task { try await store.image(for: wider) }
        try await waitUntil { gate.parkedCount == 1 }
        try await waitUntil {
            store.revalidating.withLock { $0.isEmpty } && store.cachedOriginalBytes(for: url)?.data == newBytes
        }
        gate.open()
        #expect(try await load.value.pixelSize == PixelSize(width: 160, height: 120))  // asked for before the change

        let kept = store.cachedImage(for: wider)?.pixelSize
        #expect(
            kept == nil || kept == PixelSize(width: 160, height: 160),
            "the new image is in, yet memory serves the old one: \(String(describing: kept))")
        #expect(store.cachedOriginalBytes(for: url)?.data == newBytes)
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == newBytes)
    }

    /// A size lookup that read the old file's attribute just before a revalidation replaced the image
    /// answers the old size, but does not remember it over the new one, in memory or in the new file.
    @Test func aSizeReadJustBeforeAChangedImageDoesNotOutliveIt() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/cache/no-cache/images/photo.jpg")
        let attributes = PixelSizeReadGate(parksAfterReading: true)
        let store = try fixture.store { $0.extendedAttributes = attributes }
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        store.clearMemory()
        try fixture.replacePhoto(width: 200, height: 200)
        let newBytes = try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))

        attributes.arm()
        let lookup = Task { await onOwnThread { store.cachedPixelSize(for: url) } }
        try await waitUntil { attributes.isParked }
        // The stale entry is shown from disk while it revalidates, and the new image replaces it.
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        try await waitUntil {
            store.revalidating.withLock { $0.isEmpty } && store.cachedOriginalBytes(for: url)?.data == newBytes
        }
        store.waitForDiskMaintenance()
        attributes.open()
        #expect(await lookup.value == CGSize(width: 320, height: 240))  // read before the change: answered

        #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
        store.clearMemory()
        #expect(store.disk.pixelSize(for: url) == PixelSize(width: 200, height: 200))
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
    }

    /// A load while a revalidation is writing a new image's file: before, the count of replacements
    /// went up first, so a load after a memory warning read the old file under the new count, and kept
    /// the old image in memory over the new one (the old bytes, a 160x120 variant, a 320x240 size) while
    /// the disk held the new. Now the new file is in place before the count goes up.
    @Test func aLoadWhileTheNewImageIsWrittenDoesNotKeepTheOldOneOverIt() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let url = fixture.server.url("/cache/no-cache/images/photo.jpg")
        let attributes = PixelSizeWriteGate()
        let store = try fixture.store { $0.extendedAttributes = attributes }
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        try fixture.replacePhoto(width: 200, height: 200)
        let newBytes = try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))

        // A variant hit starts the revalidation, which parks writing the new image's temporary file.
        attributes.gate.arm()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        try await waitUntil { attributes.gate.parkedCount == 1 }
        store.clearMemory()  // a memory warning
        let wider = ImageRequest(url: url, targetWidth: 160)
        let during = try await store.image(for: wider)
        #expect(during.pixelSize == PixelSize(width: 160, height: 120))  // the old image, still the current one
        attributes.gate.open()
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        store.waitForDiskMaintenance()

        #expect(store.disk.data(for: url) == newBytes)
        #expect(store.cachedOriginalBytes(for: url)?.data == newBytes, "memory keeps the old bytes")
        let kept = store.cachedImage(for: wider)?.pixelSize
        #expect(
            kept == nil || kept == PixelSize(width: 160, height: 160),
            "memory serves the old image: \(String(describing: kept))")
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
        #expect(try await store.image(for: wider).pixelSize == PixelSize(width: 160, height: 160))
    }
}
