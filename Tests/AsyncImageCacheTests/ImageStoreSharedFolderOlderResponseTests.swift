import Foundation
import Testing

@testable import AsyncImageCache

/// Two stores on one folder, where one writes an older response of an image over the newer file the other
/// wrote: the bytes on disk and the caching facts in a store's memory are then of two responses.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreSharedFolderOlderResponseTests {
    /// An image served from a folder of its own, in an old and a new version; it starts as the old one.
    final class ServedPhoto: Sendable {
        let old: Data
        let new: Data
        /// How 20 px wide pictures of each version look.
        let oldShown = PixelSize(width: 20, height: 4)
        let newShown = PixelSize(width: 20, height: 15)
        let server: TestHTTPServer
        private let folder: TemporaryDirectory
        private var file: URL { folder.url.appendingPathComponent("photo.jpg") }

        init(_ label: String) async throws {
            old = try SampleImages.jpeg(width: 800, height: 160)
            new = try SampleImages.jpeg(width: 480, height: 360, seed: 1)
            folder = TemporaryDirectory(label)
            try old.write(to: folder.url.appendingPathComponent("photo.jpg"))
            server = try await TestHTTPServer(serving: folder.url)
        }

        /// The photo's URL at `path` on the server, and the two looks the tests ask for: 20 px wide, plain and
        /// with rounded corners.
        func looks(at path: String) -> (url: URL, plain: ImageRequest, rounded: ImageRequest) {
            let url = server.url(path)
            return (
                url, ImageRequest(url: url, targetWidth: 20), ImageRequest(url: url, targetWidth: 20, cornerRadius: 4)
            )
        }

        /// Serves `version` from now on, renamed into place.
        func serve(_ version: Data) throws {
            try version.write(to: file, options: .atomic)
        }
    }

    /// What `store` shows for `request` after loads, each followed by its check, until it shows `expected`, or
    /// after four (long after it should have).
    static func shown(by store: ImageStore, for request: ImageRequest, untilItShows expected: PixelSize)
        async throws -> PixelSize?
    {
        var shown: PixelSize?
        for _ in 0..<4 where shown != expected {
            shown = try await store.image(for: request).pixelSize
            try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
            await onOwnThread { store.waitForDiskMaintenance() }
        }
        return shown
    }

    /// While `slowLook`, a look of the old image in `showing`, waits at its decode: the server changes the image,
    /// a store that never saw the photo downloads the new one (`looks.plain`) into `folder` in place of the file
    /// there (removed first, as another process's trim would), and `showing`, its memory emptied first when
    /// `clearing`, reads those new bytes for ``ImageStore/cachedOriginalBytes(for:)``. Then `release` lets the
    /// slow look land with the old image. Returns what `showing` shows for `looks.rounded` after its checks.
    static func oldLookLanding(
        _ slowLook: Task<PlatformImage, any Error>, in showing: ImageStore, photo: ServedPhoto,
        looks: (url: URL, plain: ImageRequest, rounded: ImageRequest), folder: URL, clearing: Bool,
        release: () -> Void
    ) async throws -> PixelSize? {
        try photo.serve(photo.new)
        let other = try ImageStore.makeForTesting(root: folder)
        try FileManager.default.removeItem(at: other.disk.fileURL(for: looks.url))  // trimmed by another process
        #expect(try await other.image(for: looks.plain).pixelSize == photo.newShown)
        await onOwnThread { other.waitForDiskMaintenance() }
        if clearing { showing.clearMemory() }
        try #require(showing.cachedOriginalBytes(for: looks.url)?.data == photo.new)
        release()
        #expect(try await slowLook.value.pixelSize == photo.oldShown)
        await onOwnThread { showing.waitForDiskMaintenance() }
        return try await shown(by: showing, for: looks.rounded, untilItShows: photo.newShown)
    }

    /// How a store first reads bytes that another store wrote over its file.
    enum FirstRead: String, CustomTestStringConvertible {
        case load, loadAnsweredAfterTheCheck, originalBytes
        var testDescription: String { rawValue }
    }

    /// One store's download is slow: the server read the old file for it, and then the image changed.
    /// Another store on the folder downloads the new image meanwhile, and keeps only its picture in memory
    /// (the original is over its memory budget). The slow download then arrives, and its write puts the old
    /// bytes, with their own caching facts, over the new file. The second store's next load of another look
    /// reads those bytes: they go with the file's facts, not with the new image's facts in memory, and are
    /// checked at once. The new image comes back. (Before, they were shown under the new image's facts:
    /// fresh for an hour, and then every check, made with the new image's entity tag, was answered 304. The
    /// old image was shown for good, and the new picture was dropped for it.)
    ///
    /// The old bytes are first read by a load whose picture of them lands before the check answers, by one
    /// whose picture lands after it, or by ``ImageStore/cachedOriginalBytes(for:)``. (Before the new picture
    /// went as the facts were taken, a check answered first took the answer for the bytes it was about, as the
    /// new picture still in memory came from them, and put the answer's facts on the old bytes' file: fresh
    /// for an hour again.)
    @Test(arguments: [FirstRead.load, .loadAnsweredAfterTheCheck, .originalBytes])
    func olderBytesWrittenOverTheFileByAnotherStoreAreCheckedAtOnce(readBy firstRead: FirstRead) async throws {
        let photo = try await ServedPhoto("older-response-served")
        let server = photo.server
        defer { server.stop() }
        // Fresh for an hour, with an entity tag (a hash of the bytes); the first request is answered late.
        let (url, plain, rounded) = photo.looks(at: "/held-first/slow/cache/max-age=3600/images/photo.jpg")
        let folder = TemporaryDirectory("older-response")
        let slow = try ImageStore.makeForTesting(root: folder.url)
        // Decodes of the old bytes wait for the test, when it lets the check answer first.
        let gate = GatedDecoder(open: firstRead != .loadAnsweredAfterTheCheck, holdingOnly: photo.old)
        let showing = try ImageStore.makeForTesting(root: folder.url) {
            $0.memoryByteLimit = 2000
            $0.decoder = gate
            $0.decodeConcurrency = 2
        }
        try #require(photo.new.count > 2000)

        let download = Task { try await slow.image(for: plain) }
        try await server.waitUntilHeldResponseIsMade("slow")
        try photo.serve(photo.new)
        #expect(try await showing.image(for: plain).pixelSize == photo.newShown)
        await onOwnThread { showing.waitForDiskMaintenance() }
        try #require(showing.cachedOriginalBytes(for: url)?.data == photo.new)
        try await server.release("slow")
        #expect(try await download.value.pixelSize == photo.oldShown)
        await onOwnThread { slow.waitForDiskMaintenance() }
        try #require(showing.disk.data(for: url) == photo.old, "the slow download's write did not land")

        if firstRead == .originalBytes {
            #expect(showing.cachedOriginalBytes(for: url)?.data == photo.old)
            _ = try await showing.image(for: plain)
        } else {
            let oldLook = Task { try await showing.image(for: rounded) }  // from the old bytes on disk
            if firstRead == .loadAnsweredAfterTheCheck {
                try await waitUntil { gate.enteredCount == 1 }
                try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
                gate.open()
            }
            _ = try await oldLook.value
        }
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        await onOwnThread { showing.waitForDiskMaintenance() }
        #expect(try await showing.image(for: plain).pixelSize == photo.newShown, "the old image is shown")
        #expect(try await showing.image(for: rounded).pixelSize == photo.newShown, "the old image is shown")
        #expect(showing.cachedPixelSize(for: url) == CGSize(width: 480, height: 360))
        #expect(showing.disk.data(for: url) == photo.new, "the folder keeps the old bytes")
        // A relaunch shows the new image from the disk tier, with no check (fresh for an hour).
        let relaunched = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await relaunched.image(for: plain).pixelSize == photo.newShown)
        #expect(relaunched.revalidating.withLock { $0.isEmpty })
    }

    /// A store's check of the new image it shows waits for the server's answer. Meanwhile another store's slow
    /// download of the old image lands over the file, and a load of another look reads those old bytes: the
    /// store takes the file's facts for them, to be checked (one check per URL runs at a time: the one in
    /// flight). The check in flight is then answered 304, about the new image, not the old bytes now shown:
    /// the store still checks them, and the new image comes back. (Before, the 304 refreshed the facts in
    /// memory over the old bytes' own: the old image was shown, every check made with the new image's entity
    /// tag was answered 304, for good.)
    @Test func aCheckInFlightAboutTheNewerResponseDoesNotAnswerForOlderBytesReadMeanwhile() async throws {
        let photo = try await ServedPhoto("older-response-inflight-served")
        let server = photo.server
        defer { server.stop() }
        // Stale at once (no-cache): the first request is answered late, a check only once released.
        let path = "/held-first/slow/held-conditional/check/cache/no-cache/images/photo.jpg"
        let (url, plain, rounded) = photo.looks(at: path)
        let folder = TemporaryDirectory("older-response-inflight")
        let slow = try ImageStore.makeForTesting(root: folder.url)
        let showing = try ImageStore.makeForTesting(root: folder.url) { $0.memoryByteLimit = 2000 }
        try #require(photo.new.count > 2000)

        let download = Task { try await slow.image(for: plain) }
        try await server.waitUntilHeldResponseIsMade("slow")
        try photo.serve(photo.new)
        #expect(try await showing.image(for: plain).pixelSize == photo.newShown)
        await onOwnThread { showing.waitForDiskMaintenance() }
        #expect(try await showing.image(for: plain).pixelSize == photo.newShown)  // starts its check
        try await waitUntil { try await server.hits(for: path) == 3 }
        try await server.release("slow")
        #expect(try await download.value.pixelSize == photo.oldShown)
        await onOwnThread { slow.waitForDiskMaintenance() }
        try #require(showing.disk.data(for: url) == photo.old, "the slow download's write did not land")
        #expect(try await showing.image(for: rounded).pixelSize == photo.oldShown)  // from the old bytes on disk

        try await server.release("check")
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        #expect(try await server.statuses(for: "/cache/no-cache/images/photo.jpg") == [200, 200, 304])
        _ = try await showing.image(for: plain)  // checks the bytes shown
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        #expect(try await showing.image(for: plain).pixelSize == photo.newShown, "the old image is shown")
        #expect(try await showing.image(for: rounded).pixelSize == photo.newShown, "the old image is shown")
    }

    /// A store's check of its image waits for the server's answer. Meanwhile the folder loses the file
    /// (another process trims it), the server changes the image, and another store on the folder downloads
    /// the new one and writes it; then the server changes the image back. The check is answered 304: the first
    /// store's image is current, but the file holds the other response, and keeps its own caching facts.
    /// After a relaunch, its check finds it out of date. (Before, the 304's facts went onto that file: its
    /// bytes under the validators of an image they are not, answered 304 at every check, for good.)
    @Test func aNotModifiedAnswerLeavesTheFactsOfAnotherResponsesFile() async throws {
        let photo = try await ServedPhoto("older-response-check-served")
        let server = photo.server
        defer { server.stop() }
        // Stale at once (no-cache); a download is answered at once, a check only once released.
        let path = "/held-conditional/check/cache/no-cache/images/photo.jpg"
        let url = server.url(path)
        let request = ImageRequest(url: url, targetWidth: 20)
        let folder = TemporaryDirectory("older-response-check")
        let checking = try ImageStore.makeForTesting(root: folder.url)
        let other = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await checking.image(for: request).pixelSize == photo.oldShown)
        await onOwnThread { checking.waitForDiskMaintenance() }

        #expect(try await checking.image(for: request).pixelSize == photo.oldShown)  // starts its check
        try await waitUntil { try await server.hits(for: path) == 2 }
        try FileManager.default.removeItem(at: checking.disk.fileURL(for: url))
        try photo.serve(photo.new)
        #expect(try await other.image(for: request).pixelSize == photo.newShown)
        await onOwnThread { other.waitForDiskMaintenance() }
        let written = try #require(other.disk.cacheMetadata(for: url))
        try #require(other.disk.data(for: url) == photo.new)
        try photo.serve(photo.old)
        try await server.release("check")
        try await waitUntil { checking.revalidating.withLock { $0.isEmpty } }
        #expect(try await server.statuses(for: "/cache/no-cache/images/photo.jpg") == [200, 200, 304])
        #expect(checking.disk.cacheMetadata(for: url) == written, "the 304's facts went onto the other file")
        #expect(checking.disk.data(for: url) == photo.new)

        let relaunched = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await relaunched.image(for: request).pixelSize == photo.newShown)
        try await waitUntil { relaunched.revalidating.withLock { $0.isEmpty } }
        #expect(try await relaunched.image(for: request).pixelSize == photo.oldShown, "not replaced after a check")
    }

    /// A store's check of its image waits for the server's answer. Meanwhile the server changes the image,
    /// another store on the folder downloads the new one and writes it, and the server changes the image back.
    /// The first store, whose memory keeps the picture and not the bytes, then reads the other response from
    /// the file for another look: it shows it, with the file's facts, to be checked. The first check is then
    /// answered 304: about the image the store showed before, not about the bytes it shows now. Its facts stay
    /// with those bytes' own, and the next check replaces them with the server's image. (Before, the 304's
    /// facts went into memory with the other response's pictures: each check, made with the validators of the
    /// server's image, was answered 304, and the other image was shown for good.)
    ///
    /// Or (`downloadsItself`) the file is only removed (another process trims it), and the first store
    /// downloads the new image itself for the other look, as a CDN whose edges still disagree may serve either
    /// version: kept by a load, those bytes' facts await no check, and the 304 leaves them all the same.
    @Test(arguments: [false, true])
    func aNotModifiedAnswerLeavesTheFactsOfAnotherResponseReadMeanwhile(downloadsItself: Bool) async throws {
        let photo = try await ServedPhoto("older-response-memory-check-served")
        let server = photo.server
        defer { server.stop() }
        // Stale at once (no-cache); a download is answered at once, a check only once released.
        let path = "/held-conditional/check/cache/no-cache/images/photo.jpg"
        let (url, plain, rounded) = photo.looks(at: path)
        let folder = TemporaryDirectory("older-response-memory-check")
        // Its memory keeps pictures, not the original bytes.
        let checking = try ImageStore.makeForTesting(root: folder.url) { $0.memoryByteLimit = 2000 }
        let other = try ImageStore.makeForTesting(root: folder.url)
        try #require(photo.old.count > 2000)
        #expect(try await checking.image(for: plain).pixelSize == photo.oldShown)
        await onOwnThread { checking.waitForDiskMaintenance() }
        try #require(checking.disk.data(for: url) == photo.old)

        #expect(try await checking.image(for: plain).pixelSize == photo.oldShown)  // starts its check
        try await waitUntil { try await server.hits(for: path) == 2 }
        try photo.serve(photo.new)
        try FileManager.default.removeItem(at: other.disk.fileURL(for: url))
        if downloadsItself {
            #expect(try await checking.image(for: rounded).pixelSize == photo.newShown)
            await onOwnThread { checking.waitForDiskMaintenance() }
            try photo.serve(photo.old)
        } else {
            #expect(try await other.image(for: plain).pixelSize == photo.newShown)
            await onOwnThread { other.waitForDiskMaintenance() }
            try #require(other.disk.data(for: url) == photo.new)
            try photo.serve(photo.old)
            // Another look, read from the file: the other response, shown with its own facts.
            #expect(try await checking.image(for: rounded).pixelSize == photo.newShown)
        }
        try await server.release("check")
        try await waitUntil { checking.revalidating.withLock { $0.isEmpty } }
        await onOwnThread { checking.waitForDiskMaintenance() }

        let shown = try await Self.shown(by: checking, for: plain, untilItShows: photo.oldShown)
        #expect(shown == photo.oldShown, "the other response is shown for good")
        #expect(try await checking.image(for: rounded).pixelSize == photo.oldShown)
    }

    /// Where a slow decode of the old image takes its bytes from.
    enum OldBytes: String, CustomTestStringConvertible {
        /// The folder's file.
        case disk
        /// The store's memory, which a `clearMemory()` then empties.
        case memory
        var testDescription: String { rawValue }
    }

    /// A store's load takes the old image's bytes from the folder, or from its memory, and their decode is slow.
    /// Meanwhile the server changes the image, another store on the folder downloads the new one over the file,
    /// and the first store reads those new bytes for ``ImageStore/cachedOriginalBytes(for:)``, with the new
    /// image's caching facts (after a `clearMemory()`, when the old bytes were in memory). The slow decode then
    /// lands, and its picture is shown, as memory keeps what arrived last: with the old bytes' own facts, to be
    /// checked, not the new image's. The check replaces it with the new image. (Before, the old picture went
    /// into memory beside the new image's facts, and every check, made with the new image's entity tag, was
    /// answered 304: the old image was shown for good.)
    @Test(arguments: [OldBytes.disk, .memory])
    func aLateDecodeOfOlderBytesGoesWithTheirOwnFacts(from source: OldBytes) async throws {
        let photo = try await ServedPhoto("older-response-late-decode-served")
        let server = photo.server
        defer { server.stop() }
        let looks = photo.looks(at: "/cache/max-age=3600/images/photo.jpg")  // fresh for an hour
        let (url, plain, rounded) = looks
        let folder = TemporaryDirectory("older-response-late-decode")
        let writer = try ImageStore.makeForTesting(root: folder.url)
        // Decodes of the old bytes wait for the test, once it closes the gate.
        let gate = GatedDecoder(open: source == .memory, holdingOnly: photo.old)
        let showing = try ImageStore.makeForTesting(root: folder.url) { $0.decoder = gate }
        #expect(try await writer.image(for: plain).pixelSize == photo.oldShown)
        await onOwnThread { writer.waitForDiskMaintenance() }
        if source == .memory {
            #expect(try await showing.image(for: plain).pixelSize == photo.oldShown)
            try #require(showing.originals.value(forKey: url.cacheKey)?.data == photo.old)
            gate.close()
        }

        let slowLook = Task { try await showing.image(for: rounded) }
        try await waitUntil { gate.enteredCount == (source == .memory ? 2 : 1) }
        let shown = try await Self.oldLookLanding(
            slowLook, in: showing, photo: photo, looks: looks, folder: folder.url, clearing: source == .memory,
            release: gate.open)
        #expect(shown == photo.newShown, "the old image is shown for good")
        #expect(try await showing.image(for: plain).pixelSize == photo.newShown)
        #expect(showing.cachedOriginalBytes(for: url)?.data == photo.new)
        #expect(showing.cachedPixelSize(for: url) == CGSize(width: 480, height: 360))
    }

    /// A look of the old image decodes slowly, from bytes another look of the store has shown already: the two
    /// read them from the folder together. Memory is then emptied (``ImageStore/clearMemory()``, as on a memory
    /// warning), the server changes the image, another store on the folder downloads the new one over the file,
    /// and the first store reads those new bytes for ``ImageStore/cachedOriginalBytes(for:)``. The slow decode
    /// of the old bytes then lands: its picture is shown, and the old bytes and size go into memory with it and
    /// with their own facts, though the other look kept them first. The check replaces it with the new image.
    /// (Before, only the first look of bytes read from the folder kept them in memory: the new bytes and size
    /// stayed beside the old picture, the check, answered with the new bytes, took them for those shown and only
    /// refreshed the facts, and every later check, made with the new image's entity tag, was answered 304. The
    /// old image was shown for good.) Bytes of a look taken from memory:
    /// ``aLateDecodeOfOlderBytesGoesWithTheirOwnFacts(from:)``.
    @Test func aLateDecodeOfOlderBytesAnotherLookShowedKeepsThemInMemory() async throws {
        let photo = try await ServedPhoto("older-response-second-look-served")
        let server = photo.server
        defer { server.stop() }
        let looks = photo.looks(at: "/cache/no-cache/images/photo.jpg")  // stale at once
        let (url, plain, rounded) = looks
        let folder = TemporaryDirectory("older-response-second-look")
        let gate = StageGate(.decode)  // holds the next decode
        let showing = try ImageStore.makeForTesting(root: folder.url) {
            $0.stageObserver = gate.observer
            $0.decodeConcurrency = 2
        }
        let writer = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await writer.image(for: plain).pixelSize == photo.oldShown)
        await onOwnThread { writer.waitForDiskMaintenance() }

        gate.arm()
        let slowLook = Task { try await showing.image(for: rounded) }
        try await waitUntil { gate.parkedCount == 1 }
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }  // its check, answered 304
        #expect(try await showing.image(for: plain).pixelSize == photo.oldShown)  // the same bytes, at once
        let shown = try await Self.oldLookLanding(
            slowLook, in: showing, photo: photo, looks: looks, folder: folder.url, clearing: true, release: gate.open)
        #expect(shown == photo.newShown, "the old image is shown for good")
        #expect(showing.cachedOriginalBytes(for: url)?.data == photo.new)
        #expect(showing.cachedPixelSize(for: url) == CGSize(width: 480, height: 360))
        #expect(try await showing.image(for: plain).pixelSize == photo.newShown)
    }

    /// A store's download of the image is slow: the server read the old file for it, and then the image changed.
    /// Another store on the folder downloads the new one and writes it, and the first store reads those bytes for
    /// ``ImageStore/cachedOriginalBytes(for:)``, with their caching facts. The slow download then lands: its
    /// picture is shown with its own response's facts, and the check made with them replaces it. (Before, it went
    /// beside the new image's facts, and every check, made with the new image's entity tag, was answered 304: the
    /// old image was shown for good.)
    @Test func aLateDownloadOfTheOlderImageGoesWithItsOwnFacts() async throws {
        let photo = try await ServedPhoto("older-response-late-download-served")
        let server = photo.server
        defer { server.stop() }
        // Stale at once (no-cache); the first request is answered late.
        let (url, plain, rounded) = photo.looks(at: "/held-first/slow/cache/no-cache/images/photo.jpg")
        let folder = TemporaryDirectory("older-response-late-download")
        let showing = try ImageStore.makeForTesting(root: folder.url)
        let other = try ImageStore.makeForTesting(root: folder.url)

        let download = Task { try await showing.image(for: rounded) }
        try await server.waitUntilHeldResponseIsMade("slow")
        try photo.serve(photo.new)
        #expect(try await other.image(for: plain).pixelSize == photo.newShown)
        await onOwnThread { other.waitForDiskMaintenance() }
        try #require(showing.cachedOriginalBytes(for: url)?.data == photo.new)
        try await server.release("slow")
        #expect(try await download.value.pixelSize == photo.oldShown)
        try await waitUntil { showing.revalidating.withLock { $0.isEmpty } }
        await onOwnThread { showing.waitForDiskMaintenance() }

        let shown = try await Self.shown(by: showing, for: rounded, untilItShows: photo.newShown)
        #expect(shown == photo.newShown, "the old image is shown for good")
        #expect(try await showing.image(for: plain).pixelSize == photo.newShown)
        #expect(showing.cachedOriginalBytes(for: url)?.data == photo.new)
    }

    /// A store's check finds the image changed, and its write of the new one waits for the disk. Meanwhile
    /// another store on the folder removes the image (raising the count the stores on the folder share), and
    /// the write is dropped: the first store keeps showing the image it had, and its next check asks about
    /// it again, and replaces it. (Before, the new response's caching facts went into memory before the
    /// write, and stayed when it was dropped: beside the old pictures, each check, made with the new image's
    /// entity tag, was answered 304, and the old image was shown for good.)
    @Test func aReplacementDroppedAtItsWriteLeavesTheFactsOfTheImageShown() async throws {
        let photo = try await ServedPhoto("dropped-replacement-served")
        let server = photo.server
        defer { server.stop() }
        let url = server.url("/cache/no-cache/images/photo.jpg")  // stale at once
        let request = ImageRequest(url: url, targetWidth: 20)
        let folder = TemporaryDirectory("dropped-replacement")
        let gate = CacheFactsWriteGate()
        let checking = try ImageStore.makeForTesting(root: folder.url) { $0.extendedAttributes = gate }
        let other = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await checking.image(for: request).pixelSize == photo.oldShown)
        await onOwnThread { checking.waitForDiskMaintenance() }

        try photo.serve(photo.new)
        gate.gate.arm()
        #expect(try await checking.image(for: request).pixelSize == photo.oldShown)  // starts its check
        try await waitUntil { gate.gate.parkedCount == 1 }  // the new image's write
        await onOwnThread { other.removeImage(for: url) }
        gate.gate.open()
        try await waitUntil { checking.revalidating.withLock { $0.isEmpty } }
        await onOwnThread { checking.waitForDiskMaintenance() }

        let shown = try await Self.shown(by: checking, for: request, untilItShows: photo.newShown)
        #expect(shown == photo.newShown, "the old image is shown for good")
        // The first check's answer, then the next one's, made with the old image's entity tag.
        #expect(try await server.statuses(for: "/cache/no-cache/images/photo.jpg").prefix(3) == [200, 200, 200])
    }
}
