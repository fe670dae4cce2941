import Foundation
import Testing

@testable import AsyncImageCache

/// Revalidations in two stores on one folder: the disk tier's file is shared, each store's memory is its own.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreSharedFolderRevalidationTests {
    /// A store shows an image from memory (its variant; the original's bytes are not in memory) and checks it:
    /// the server answers with the whole new image, whose bytes another store on the folder has already put in
    /// the disk tier. Those bytes are new to this store, whatever the file holds: its old image goes, and the
    /// next load shows the new one. (Before, the answer was taken for the same bytes again, as it matched the
    /// file: the store kept showing the old image, with the new image's validators, so that every later
    /// check was answered 304 and it was never replaced.)
    @Test func aCheckAnsweredWithTheBytesAnotherStoreWroteReplacesTheImageShown() async throws {
        let served = TemporaryDirectory("shared-revalidation-served")
        let file = served.url.appendingPathComponent("photo.jpg")
        let old = try SampleImages.jpeg(width: 400, height: 80)
        let new = try SampleImages.jpeg(width: 240, height: 180, seed: 1)
        try old.write(to: file)
        let server = try await TestHTTPServer(serving: served.url)
        defer { server.stop() }
        // Stale at once (no-cache), with an entity tag and Last-Modified; a matching check is answered 304.
        let url = server.url("/cache/no-cache/images/photo.jpg")
        let request = ImageRequest(url: url, targetWidth: 20)
        let (oldShown, newShown) = (PixelSize(width: 20, height: 4), PixelSize(width: 20, height: 15))
        // Room in memory for the 20 px wide images, not for the originals' bytes: the stores keep no original
        // in memory, and compare an answer with the bytes on disk.
        let memoryByteLimit = newShown.width * newShown.height * 4
        try #require(old.count > memoryByteLimit && new.count > memoryByteLimit)
        let folder = TemporaryDirectory("shared-revalidation")
        let showing = try ImageStore.makeForTesting(root: folder.url) { $0.memoryByteLimit = memoryByteLimit }
        let other = try ImageStore.makeForTesting(root: folder.url) { $0.memoryByteLimit = memoryByteLimit }
        #expect(try await showing.image(for: request).pixelSize == oldShown)
        await onOwnThread { showing.waitForDiskMaintenance() }

        try new.write(to: file, options: .atomic)
        // The other store shows the old image from the disk tier, checks it and puts the new one there.
        #expect(try await other.image(for: request).pixelSize == oldShown)
        try await waitUntil { other.revalidating.withLock { $0.isEmpty } }
        await onOwnThread { other.waitForDiskMaintenance() }
        #expect(other.disk.data(for: url) == new)

        // The first store shows its old image from memory; its check is answered with the new image's bytes.
        #expect(try await showing.image(for: request).pixelSize == oldShown)
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        #expect(try await showing.image(for: request).pixelSize == newShown, "the old image is shown after the check")
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        #expect(
            try await showing.image(for: request).pixelSize == newShown, "the old image is shown after a second check")
        #expect(showing.cachedPixelSize(for: url) == CGSize(width: 240, height: 180))
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        #expect(try await server.statuses(for: "/cache/no-cache/images/photo.jpg") == [200, 200, 200, 304, 304])
    }
}
