import Foundation
import Testing

@testable import AsyncImageCache

/// The images a store keeps in memory of a remote URL are of one response: the one its caching facts, and
/// so its revalidations, are about.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreVariantResponseTests {
    /// A no-cache image shown at one look stays in memory while its bytes leave both tiers (the original over
    /// the memory budget, the file evicted); the server changes it, and a load of another look downloads the
    /// new image. The old picture goes with it: the next load of the first look shows the new one. (Before, the
    /// old picture stayed beside the new one, and its checks, made with the new image's entity tag, were
    /// answered 304: the first look showed the old image for good, while cachedPixelSize gave the new size.)
    @Test func aDownloadOfNewBytesDropsThePicturesOfTheOldOnes() async throws {
        let served = TemporaryDirectory("variant-response-served")
        let file = served.url.appendingPathComponent("photo.jpg")
        let old = try SampleImages.jpeg(width: 800, height: 160)
        let new = try SampleImages.jpeg(width: 480, height: 360, seed: 1)
        try old.write(to: file)
        let server = try await TestHTTPServer(serving: served.url)
        defer { server.stop() }
        // Stale at once (no-cache), with an entity tag and Last-Modified; a matching check is answered 304.
        let path = "/cache/no-cache/images/photo.jpg"
        let url = server.url(path)
        let plain = ImageRequest(url: url, targetWidth: 20)
        let rounded = ImageRequest(url: url, targetWidth: 20, cornerRadius: 4)
        let (oldShown, newShown) = (PixelSize(width: 20, height: 4), PixelSize(width: 20, height: 15))
        // Room for both 20 px wide pictures, not for either original's bytes.
        let memoryByteLimit = 2000
        try #require(old.count > memoryByteLimit && new.count > memoryByteLimit)
        let folder = TemporaryDirectory("variant-response")
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.memoryByteLimit = memoryByteLimit }
        #expect(try await store.image(for: plain).pixelSize == oldShown)
        await onOwnThread { store.waitForDiskMaintenance() }

        try new.write(to: file, options: .atomic)
        #expect(store.evictExpired(maxAge: 0) == 1)
        // Rounded corners: the plain picture does not serve it, and nothing holds the bytes: downloaded.
        #expect(try await store.image(for: rounded).pixelSize == newShown)
        await onOwnThread { store.waitForDiskMaintenance() }
        #expect(store.cachedImage(for: plain)?.pixelSize != oldShown, "the old picture is still in memory")

        _ = try await store.image(for: plain)
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        #expect(try await store.image(for: plain).pixelSize == newShown, "the old image is shown after a check")
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        #expect(try await store.image(for: plain).pixelSize == newShown, "the old image is shown after two checks")
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 480, height: 360))
    }

    /// A store shows an image from memory whose original has left memory; another store on the folder checks
    /// the image, finds it changed and puts the new one in the disk tier. Asked for the original bytes, the
    /// first store reads the new ones from disk and keeps them: its old picture goes with them, and its next
    /// load shows the new image. (Before, the old picture stayed beside the new bytes; its check, answered
    /// with those bytes, was taken for the same image again, and the old picture was shown for good.)
    @Test func originalBytesReadFromDiskDropThePicturesOfOtherBytes() async throws {
        let served = TemporaryDirectory("variant-response-bytes-served")
        let file = served.url.appendingPathComponent("photo.jpg")
        try SampleImages.jpeg(width: 200, height: 40).write(to: file)
        try SampleImages.jpeg(width: 100, height: 100, seed: 2).write(
            to: served.url.appendingPathComponent("other.jpg"))
        let server = try await TestHTTPServer(serving: served.url)
        defer { server.stop() }
        let url = server.url("/cache/no-cache/images/photo.jpg")
        let otherURL = server.url("/cache/max-age=3600/images/other.jpg")
        let request = ImageRequest(url: url, targetWidth: 20)
        let (oldShown, newShown) = (PixelSize(width: 20, height: 4), PixelSize(width: 20, height: 15))
        let folder = TemporaryDirectory("variant-response-bytes")
        // One image and one original in memory at a time.
        let showing = try ImageStore.makeForTesting(root: folder.url) { $0.memoryCountLimit = 1 }
        let checking = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await checking.image(for: ImageRequest(url: otherURL, targetWidth: 20)).pixelSize.width == 20)
        #expect(try await showing.image(for: request).pixelSize == oldShown)
        await onOwnThread {
            checking.waitForDiskMaintenance()
            showing.waitForDiskMaintenance()
        }
        // The other image's original takes the photo's place in memory; the photo's picture stays.
        #expect(showing.cachedOriginalBytes(for: otherURL) != nil)
        #expect(showing.cachedImage(for: request)?.pixelSize == oldShown)

        try SampleImages.jpeg(width: 120, height: 90, seed: 1).write(to: file, options: .atomic)
        #expect(try await checking.image(for: request).pixelSize == oldShown)
        try await waitUntil { checking.revalidating.withLock { $0.isEmpty } }
        await onOwnThread { checking.waitForDiskMaintenance() }
        #expect(showing.cachedOriginalBytes(for: url)?.pixelSize == CGSize(width: 120, height: 90))

        _ = try await showing.image(for: request)
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        #expect(try await showing.image(for: request).pixelSize == newShown, "the old image is shown after a check")
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        #expect(try await showing.image(for: request).pixelSize == newShown, "the old image is shown after two checks")
    }

    /// A store on a file system without extended attributes shows a no-cache image from memory, its original
    /// over the memory budget and its file not kept (stale facts it cannot write). The server cannot validate,
    /// and answers each check with the same bytes again: the picture in memory was decoded from them, and stays,
    /// with no decode. (Before, the answer was compared with the disk tier's file, taken only while it had the
    /// facts the check began with: with no file and no facts on disk, every such check decoded the answer
    /// again and dropped the pictures, so the next load decoded the image anew.)
    @Test func aCheckAnsweredWithTheBytesThePicturesCameFromKeepsThem() async throws {
        let served = TemporaryDirectory("variant-response-same-served")
        let bytes = try SampleImages.jpeg(width: 800, height: 160)
        try bytes.write(to: served.url.appendingPathComponent("photo.jpg"))
        let server = try await TestHTTPServer(serving: served.url)
        defer { server.stop() }
        // Stale at once, with neither an entity tag nor Last-Modified: each check downloads the image whole.
        let path = "/cache-plain/no-cache/images/photo.jpg"
        let request = ImageRequest(url: server.url(path), targetWidth: 20)
        let memoryByteLimit = 2000
        try #require(bytes.count > memoryByteLimit)
        let folder = TemporaryDirectory("variant-response-same")
        let store = try ImageStore.makeForTesting(root: folder.url) {
            $0.memoryByteLimit = memoryByteLimit
            $0.extendedAttributes = RefusingAttributes()
        }
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 20, height: 4))
        await onOwnThread { store.waitForDiskMaintenance() }
        try #require(store.cachedOriginalBytes(for: request.url) == nil, "the bytes are neither in memory nor on disk")
        let decodes = store.statistics.decodes

        for check in 1...2 {
            #expect(try await store.image(for: request).pixelSize == PixelSize(width: 20, height: 4))
            try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
            #expect(store.statistics.notModified == check, "check \(check) did not find the same bytes")
            #expect(store.cachedImage(for: request) != nil, "the picture was dropped at check \(check)")
        }
        #expect(store.statistics.decodes == decodes)
        #expect(try await server.statuses(for: path) == [200, 200, 200])
    }
}
