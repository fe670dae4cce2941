import Foundation
import Testing

@testable import AsyncImageCache

/// A decode that lands after memory took caching facts, or an original, that it did not look up: which
/// response the facts and the original in memory are about is told by their bytes where memory has them.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreLateDecodeFactsTests {
    typealias ServedPhoto = ImageStoreSharedFolderOlderResponseTests.ServedPhoto

    /// One store, nobody else on its folder. Its entry is stale, with a Last-Modified older than the server's
    /// file: the server touched the file (a redeploy of the same bytes), and its check is answered 200 with the
    /// same bytes under a new Last-Modified, fresh for an hour. A decode of another look, taken from memory
    /// before the answer, lands after it: its bytes are the very ones the answer confirmed, and the answer's
    /// facts stay. The next load asks nothing. (With the facts of 297159b/7bfae90, the decode's older facts,
    /// whose Last-Modified "names another response", went back into memory to be checked: a check made with
    /// the old Last-Modified, answered 200 with the whole image again, a wasted download.)
    ///
    /// The decode takes its bytes from memory, or (`fromDisk`, the store's memory keeping pictures and not the
    /// bytes) from the disk tier, where the pictures' bytes tell them for the same.
    @Test(arguments: [false, true])
    func aDecodeLandingAfterACheckConfirmedItsBytesUnderNewValidatorsKeepsTheCheckFacts(fromDisk: Bool)
        async throws
    {
        let photo = try await ServedPhoto("late-decode-same-bytes-served")
        let server = photo.server
        defer { server.stop() }
        // Last-Modified only (the file's date), fresh for an hour; a check is answered only once released.
        let path = "/held-conditional/check/cache-lm/max-age=3600/images/photo.jpg"
        let (url, plain, rounded) = photo.looks(at: path)
        let folder = TemporaryDirectory("late-decode-same-bytes")
        let gate = GatedDecoder(open: true, holdingOnly: photo.old)
        let store = try ImageStore.makeForTesting(root: folder.url) {
            $0.decoder = gate
            if fromDisk { $0.memoryByteLimit = 2000 }
        }
        try #require(photo.old.count > 2000)
        // Stored at an earlier launch, stale now, dated before the server's file was last touched.
        let stale = HTTPCachePolicy(maxAge: 0, lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        try store.disk.store(
            photo.old, pixelSize: PixelSize(width: 800, height: 160),
            metadata: HTTPCacheMetadata(policy: stale, receivedAt: Date(timeIntervalSinceNow: -7200)), for: url)

        #expect(try await store.image(for: plain).pixelSize == photo.oldShown)  // from disk; starts its check
        try await waitUntil { try await server.hits(for: path) == 1 }
        try #require((store.originals.value(forKey: url.cacheKey)?.data == photo.old) != fromDisk)
        gate.close()
        let otherLook = Task { try await store.image(for: rounded) }  // its decode held
        try await waitUntil { gate.enteredCount == 2 }
        try await server.release("check")
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        gate.open()
        #expect(try await otherLook.value.pixelSize == photo.oldShown)
        await onOwnThread { store.waitForDiskMaintenance() }

        #expect(try await store.image(for: plain).pixelSize == photo.oldShown)
        #expect(try await store.image(for: rounded).pixelSize == photo.oldShown)
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        // The first check's answer only.
        #expect(
            try await server.statuses(for: "/cache-lm/max-age=3600/images/photo.jpg") == [200],
            "the same bytes were checked again")
        #expect(store.cacheMetadata.value(forKey: url.cacheKey)?.awaitsCheck == false)
    }

    /// A server that sends no validators. A store shows the old image, and a decode of another look takes its
    /// bytes from memory and is slow. Meanwhile the server changes the image, another store on the folder
    /// writes the new one, and the first store, its memory cleared, reads those new bytes for
    /// ``ImageStore/cachedOriginalBytes(for:)``. The slow decode lands: its picture is shown, and memory's
    /// original goes with it (the old bytes), so the check, answered with the whole new image, is not taken for
    /// "the same bytes" and replaces it. (Before, the facts of both responses named none, so the new bytes
    /// stayed as memory's original beside the old picture: each check's 200 of the new image matched that
    /// original, and the old image was shown for good.)
    @Test func aLateDecodeWithoutValidatorsTakesBackItsOriginal() async throws {
        let photo = try await ServedPhoto("late-decode-no-validators-served")
        let server = photo.server
        defer { server.stop() }
        // No validators, stale at once: every load that shows it asks for the whole image again.
        let path = "/cache-plain/no-cache/images/photo.jpg"
        let looks = photo.looks(at: path)
        let (url, plain, rounded) = looks
        let folder = TemporaryDirectory("late-decode-no-validators")
        let writer = try ImageStore.makeForTesting(root: folder.url)
        let gate = GatedDecoder(open: true, holdingOnly: photo.old)
        let showing = try ImageStore.makeForTesting(root: folder.url) { $0.decoder = gate }
        #expect(try await writer.image(for: plain).pixelSize == photo.oldShown)
        await onOwnThread { writer.waitForDiskMaintenance() }
        #expect(try await showing.image(for: plain).pixelSize == photo.oldShown)
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        try #require(showing.originals.value(forKey: url.cacheKey)?.data == photo.old)

        gate.close()
        let slowLook = Task { try await showing.image(for: rounded) }  // from memory, its decode held
        try await waitUntil { gate.enteredCount == 2 }
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        let shown = try await ImageStoreSharedFolderOlderResponseTests.oldLookLanding(
            slowLook, in: showing, photo: photo, looks: looks, folder: folder.url, clearing: true, release: gate.open)
        #expect(shown == photo.newShown, "the old image is shown for good")
        #expect(showing.cachedOriginalBytes(for: url)?.data == photo.new)
    }

    /// A store shows the old image, with its facts, and memory holds the new image's bytes as its original:
    /// what `cachedOriginalBytes(for:)` leaves when it reads another store's newer file and keeps it just after
    /// a slow decode of the old bytes kept its picture (it compares the bytes it read with the pictures before
    /// the step that keeps them; the two steps are microseconds apart, too close to order from a test, so the
    /// test puts the bytes in memory itself). The check is answered 200 with the new bytes: they are not taken
    /// for the bytes shown, as the pictures were decoded from others, and replace the picture. (Before, the
    /// answer was compared with the original alone, taken for the same bytes, and only refreshed the facts:
    /// the old image was shown for good.)
    @Test func aCheckAnsweredWithTheOriginalsBytesReplacesPicturesOfOtherBytes() async throws {
        let photo = try await ServedPhoto("pictures-of-other-bytes-served")
        let server = photo.server
        defer { server.stop() }
        let (url, plain, rounded) = photo.looks(at: "/cache/no-cache/images/photo.jpg")  // stale at once
        let folder = TemporaryDirectory("pictures-of-other-bytes")
        let store = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await store.image(for: plain).pixelSize == photo.oldShown)
        #expect(try await store.image(for: rounded).pixelSize == photo.oldShown)
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        await onOwnThread { store.waitForDiskMaintenance() }

        try photo.serve(photo.new)
        let newBytes = OriginalImage(data: photo.new, header: try ImageHeader.parse(photo.new), fileStamp: nil)
        store.keepOriginal(newBytes, forKey: url.cacheKey)
        let shown = try await ImageStoreSharedFolderOlderResponseTests.shown(
            by: store, for: rounded, untilItShows: photo.newShown)
        #expect(shown == photo.newShown, "the old image is shown for good")
        #expect(try await store.image(for: plain).pixelSize == photo.newShown)
    }
}
