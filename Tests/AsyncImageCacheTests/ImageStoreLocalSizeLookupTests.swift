import Foundation
import Testing

@_spi(Tools) @testable import AsyncImageCache

#if canImport(Glibc)
import Glibc
#endif

/// `cachedPixelSize(for:)` of a local file on a memo miss: a regular file's version comes from the descriptor
/// its header is read through, so a version a load already recorded costs no `stat` by path; a file that
/// changes while it is read is answered and not remembered; one replaced since its version was recorded is
/// read at its new version.
@Suite struct ImageStoreLocalSizeLookupTests {
    private func makeStore(
        in folder: TemporaryDirectory, observingHeaderReads observer: (@Sendable (URL) -> Void)? = nil
    ) throws -> (ImageStore, FileInspectorSpy) {
        let spy = FileInspectorSpy()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.fileInspector = spy
            $0.localHeaderReadObserver = observer
        }
        return (store, spy)
    }

    /// `photo.jpg`, a JPEG of `width` x `height`, written into a new folder, and the folder.
    private static func photo(width: Int, height: Int) throws -> (file: URL, folder: TemporaryDirectory) {
        let folder = TemporaryDirectory("local-size")
        let file = folder.url.appendingPathComponent("photo.jpg")
        try SampleImages.jpeg(width: width, height: height).write(to: file)
        return (file, folder)
    }

    /// The version `store` has recorded for `url`, and the one the file system gives its path now.
    private static func versions(of url: URL, in store: ImageStore) throws -> (recorded: FileStamp??, now: FileStamp?) {
        (
            store.localFileVersions.value(forKey: url.cacheKey),
            SystemFileInspector().stamp(ofFileAt: try FileSystemPath(url))
        )
    }

    /// Rewrites the file at `url` in place: same inode, new bytes, as an editor that saves without renaming.
    private static func rewriteInPlace(_ url: URL, with data: Data) throws {
        let descriptor = open(url.path, O_WRONLY | O_TRUNC)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        defer { close(descriptor) }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == data.count else { throw POSIXError(.EIO) }
    }

    @Test func aVersionALoadRecordedIsLookedUpWithoutAStatByPath() async throws {
        let (file, folder) = try Self.photo(width: 300, height: 200)
        let (store, spy) = try makeStore(in: folder)
        _ = try await store.image(for: ImageRequest(url: file, targetWidth: 100))
        store.clearMemory()  // the size memo emptied; the version the load read stays recorded
        let stats = spy.count
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 300, height: 200))
        #expect(spy.count == stats, "no stat by path: the open descriptor's status matched the recorded version")
        #expect(store.statistics.sizesFromHeader == 1)
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 300, height: 200))
        #expect(store.statistics.sizesFromHeader == 1, "remembered: the second lookup is a memo hit")
    }

    @Test func aFileNoLoadRecordedIsStattedOnceUnderTheLockAndRemembered() throws {
        let (file, folder) = try Self.photo(width: 120, height: 90)
        let (store, spy) = try makeStore(in: folder)
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 120, height: 90))
        #expect(spy.count == 1)
        let versions = try Self.versions(of: file, in: store)
        #expect(versions.recorded == versions.now)
        store.clearMemory()
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 120, height: 90))
        #expect(spy.count == 1, "the version recorded by the first lookup answers the second")
    }

    @Test func aSymbolicLinkIsStattedByPathBeforeAndAfterItsRead() throws {
        let (file, folder) = try Self.photo(width: 80, height: 60)
        let link = folder.url.appendingPathComponent("link.jpg")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        let (store, spy) = try makeStore(in: folder)
        #expect(store.cachedPixelSize(for: link) == CGSize(width: 80, height: 60))
        #expect(spy.count == 2)
        // The version recorded is the link's too, as a load takes it.
        let versions = try Self.versions(of: link, in: store)
        #expect(versions.recorded == versions.now)
        #expect(versions.recorded??.linkInode != 0)
    }

    @Test(arguments: [false, true])
    func aFileRewrittenInPlaceWhileItsHeaderIsReadIsAnsweredNotRemembered(versionRecorded: Bool) async throws {
        let (file, folder) = try Self.photo(width: 300, height: 200)
        let newer = try SampleImages.jpeg(width: 200, height: 50, seed: 3)
        let rewrites = LockedBox(0)
        let (store, _) = try makeStore(in: folder) { _ in
            let isFirst = rewrites.withLock { count in
                defer { count += 1 }
                return count == 0
            }
            if isFirst { try? Self.rewriteInPlace(file, with: newer) }
        }
        if versionRecorded {
            _ = try await store.image(for: ImageRequest(url: file, targetWidth: 100))
            store.clearMemory()
        }
        // The bytes read are the old version's: answered, but the descriptor's status changed during the read.
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 300, height: 200))
        #expect(rewrites.withLock { $0 } == 1)
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 50), "read again, not remembered")
        #expect(store.statistics.sizesFromHeader == 2)
    }

    @Test func aFileReplacedSinceALoadRecordedItsVersionIsReadAtItsNewVersion() async throws {
        let (file, folder) = try Self.photo(width: 300, height: 200)
        let (store, _) = try makeStore(in: folder)
        let request = ImageRequest(url: file, targetWidth: 100)
        _ = try await store.image(for: request)
        let old = try Self.versions(of: file, in: store).recorded
        // Saved over by a rename, as most apps save: a new inode at the path.
        try SampleImages.jpeg(width: 160, height: 240, seed: 5).write(to: file, options: .atomic)
        store.clearMemory()
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 160, height: 240))
        let versions = try Self.versions(of: file, in: store)
        #expect(versions.recorded != old)
        #expect(versions.recorded == versions.now)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 150))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 160, height: 240))
    }
}
