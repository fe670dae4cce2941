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

    /// A relaunched store reads an image from the disk tier, and its caching facts after its bytes; another
    /// store (of another process) renames a new file into place between the two reads. The bytes are read
    /// again, and the load shows the new image with the new image's facts. (Before, the old bytes were kept
    /// with the new file's facts: their check was answered 304, and the old image was shown for good.)
    @Test func bytesReadFromAFileReplacedBeforeItsFactsWereReadAreReadAgain() async throws {
        let replaced = try await FileReplacedBetweenReads.make()
        let relaunched = replaced.relaunched
        let first = try await relaunched.image(for: replaced.request)
        #expect(replaced.attributes.hookRan)
        try await waitUntil { relaunched.revalidating.withLock { $0.isEmpty } }
        let next = try await relaunched.image(for: replaced.request)
        #expect(
            next.pixelSize == FileReplacedBetweenReads.newShown,
            "the old image is shown after a check (first load: \(first.pixelSize))")
        try await waitUntil { relaunched.revalidating.withLock { $0.isEmpty } }
        #expect(relaunched.cachedOriginalBytes(for: replaced.url)?.pixelSize == CGSize(width: 120, height: 90))
    }

    /// The same race for ``ImageStore/cachedOriginalBytes(for:)``, which keeps what it reads in memory with its
    /// facts: the bytes are read again, and it hands out and keeps the new image. (Before, it kept the old
    /// bytes with the new file's facts, and the loads after it showed the old image for good.)
    @Test func originalBytesReadFromAFileReplacedBeforeItsFactsWereReadAreReadAgain() async throws {
        let replaced = try await FileReplacedBetweenReads.make()
        let relaunched = replaced.relaunched
        #expect(relaunched.cachedOriginalBytes(for: replaced.url)?.pixelSize == CGSize(width: 120, height: 90))
        #expect(replaced.attributes.hookRan)
        _ = try await relaunched.image(for: replaced.request)
        try await waitUntil { relaunched.revalidating.withLock { $0.isEmpty } }
        #expect(
            try await relaunched.image(for: replaced.request).pixelSize == FileReplacedBetweenReads.newShown,
            "the old image is shown after a check")
    }
}

/// A no-cache 200x40 image in the disk tier of a folder, replaced on the server by a 120x90 one, whose file
/// (with its facts, as another process's store wrote it in a folder of its own) is renamed into the entry's
/// place as a store relaunched on the folder first reads the entry's caching facts.
private struct FileReplacedBetweenReads {
    static let (oldShown, newShown) = (PixelSize(width: 20, height: 4), PixelSize(width: 20, height: 15))
    let served: TemporaryDirectory
    let folder: TemporaryDirectory
    let elsewhere: TemporaryDirectory
    let server: TestHTTPServer
    let url: URL
    let request: ImageRequest
    let attributes: HookedAttributes
    let relaunched: ImageStore

    static func make() async throws -> FileReplacedBetweenReads {
        let served = TemporaryDirectory("replaced-between-reads-served")
        let file = served.url.appendingPathComponent("photo.jpg")
        try SampleImages.jpeg(width: 200, height: 40).write(to: file)
        let server = try await TestHTTPServer(serving: served.url)
        let url = server.url("/cache/no-cache/images/photo.jpg")
        let request = ImageRequest(url: url, targetWidth: 20)
        let folder = TemporaryDirectory("replaced-between-reads")
        let writing = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await writing.image(for: request).pixelSize == oldShown)
        await onOwnThread { writing.waitForDiskMaintenance() }

        try SampleImages.jpeg(width: 120, height: 90, seed: 1).write(to: file, options: .atomic)
        let elsewhere = TemporaryDirectory("replaced-between-reads-elsewhere")
        let other = try ImageStore.makeForTesting(root: elsewhere.url)
        #expect(try await other.image(for: request).pixelSize == newShown)
        await onOwnThread { other.waitForDiskMaintenance() }
        let newFile = other.disk.filePath(for: url)

        let attributes = HookedAttributes()
        let relaunched = try ImageStore.makeForTesting(root: folder.url) { $0.extendedAttributes = attributes }
        let entry = relaunched.disk.filePath(for: url)
        attributes.beforeNextFactsRead { rename(newFile, entry) }
        return FileReplacedBetweenReads(
            served: served, folder: folder, elsewhere: elsewhere, server: server, url: url, request: request,
            attributes: attributes, relaunched: relaunched)
    }
}

/// The real attributes, except that the next read of the HTTP caching facts, once armed, first runs a hook.
private final class HookedAttributes: FileAttributesHook, @unchecked Sendable {
    // `hook` and `ran` are only touched while holding `lock`.
    private let lock = NSLock()
    private var hook: (() -> Void)?
    private var ran = false

    func beforeNextFactsRead(_ hook: @escaping () -> Void) { lock.withLock { self.hook = hook } }
    var hookRan: Bool { lock.withLock { ran } }

    func read(named name: String, atPath path: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) -> Int?
    {
        if name == HTTPCacheMetadata.attributeName,
            let hook = lock.withLock({ () -> (() -> Void)? in
                defer { hook = nil }
                if hook != nil { ran = true }
                return hook
            })
        {
            hook()
        }
        return FileExtendedAttributes().read(named: name, atPath: path, into: buffer)
    }
}
