import Foundation
import Testing

@testable import AsyncImageCache

/// A file that a load finds damaged on disk is removed, and only that file: a good one that another write put
/// in place under the same name since the load read it stays, and is served instead of being fetched again.
@Suite(.timeLimit(.minutes(4))) struct ImageStoreDamagedDiskFileTests {
    /// The good file's commit holds the count's lock, its rename due, while the load's decode fails; it renames
    /// once the load has looked at the disk again to remove the damaged bytes (a look dates the file it reads),
    /// or after 2 s, and the removal, which needs that lock, comes after the rename. Before, the removal read
    /// the damaged bytes back, found them still there, and removed by name what was there by then: the good
    /// file, which the load's second try then downloaded again.
    @Test func aGoodFileCommittedAfterTheDamagedOneWasReadStays() async throws {
        let folder = TemporaryDirectory("damaged-disk-file")
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let size = PixelSize(width: 64, height: 48)
        let damaged = try SampleImages.jpeg(width: 64, height: 48, seed: 1)
        let good = try SampleImages.jpeg(width: 64, height: 48, seed: 2)
        let decoder = DamagedBytesDecoder(damaged: damaged)
        let loader = RecordingLoader(base: FixedBytesLoader(bytes: good))
        let store = try ImageStore.makeForTesting(root: folder.url) {
            $0.dataLoader = loader
            $0.decoder = decoder
        }
        let disk = store.disk
        try disk.store(damaged, pixelSize: size, for: url)
        let commit = HeldCommit(of: good, pixelSize: size, for: url, in: disk)
        decoder.onDamaged.withLock { $0 = { commit.start() } }

        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 32))
        commit.finish()
        #expect(image.pixelSize == PixelSize(width: 32, height: 24))
        #expect(loader.startedCount == 0, "the good file was removed and downloaded again")
        #expect(store.statistics.sourceFetches == 0)
        store.waitForDiskMaintenance()
        #expect(disk.data(for: url) == good)
    }
}

extension ImageStoreDamagedDiskFileTests {
    /// Bytes on disk that are no image at all (no header) are removed as the damaged ones are, only as the
    /// file read: here a good file's commit, held in its rename step, renames once the load has read the
    /// junk (a read dates the file), and the load's removal, which needs the same lock, comes after. The
    /// load then asks the source, which answers junk too. Before, the removal went by name and took the
    /// good file with it: nothing was left on disk. Now the good file stays, for the next load.
    @Test func aGoodFileCommittedAfterBytesWithoutAHeaderWereReadStays() async throws {
        let folder = TemporaryDirectory("damaged-disk-file")
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let size = PixelSize(width: 64, height: 48)
        let good = try SampleImages.jpeg(width: 64, height: 48, seed: 2)
        let loader = RecordingLoader(base: FixedBytesLoader(bytes: Data("<html>not an image</html>".utf8)))
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let disk = store.disk
        try disk.store(Data("junk, no header".utf8), pixelSize: size, for: url)
        let commit = HeldCommit(of: good, pixelSize: size, for: url, in: disk)
        commit.start()

        await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: url, targetWidth: 32))
        }
        commit.finish()
        #expect(loader.startedCount == 1)
        store.waitForDiskMaintenance()
        #expect(disk.data(for: url) == good, "the good file was removed with the junk")
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 32))
        #expect(image.pixelSize == PixelSize(width: 32, height: 24))
        #expect(loader.startedCount == 1)
    }
}

/// A commit of good bytes for a URL whose file on disk a load is about to read, held in its rename step
/// (under the count's lock) until the load has looked at the file (a look dates the file it reads), and
/// 0.2 s more: a removal the load makes, which needs that lock, comes after the rename. No time limit of
/// its own but the suite's: with 2 s, then 60 s, a whole-suite CI run on two cores twice renamed before
/// the load read (the load found the good file). A load that never reads runs into the suite's limit.
final class HeldCommit: Sendable {
    private let group = DispatchGroup()
    private let failure = LockedBox<(any Error)?>(nil)
    private let renameCalls = LockedBox(0)
    private let bytes: Data
    private let pixelSize: PixelSize
    private let url: URL
    private let disk: DiskStore

    init(of bytes: Data, pixelSize: PixelSize, for url: URL, in disk: DiskStore) {
        (self.bytes, self.pixelSize, self.url, self.disk) = (bytes, pixelSize, url, disk)
    }

    /// Dates the file an hour back, starts the commit and returns once it waits in its rename step.
    func start() {
        let path = disk.filePath(for: url)
        let hourAgo = timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)
        // The rename below waits for a fresh date: a file that kept its own would let it go at once.
        let dated = utimensat(AT_FDCWD, path, [hourAgo, hourAgo], AT_SYMLINK_NOFOLLOW) == 0
        #expect(dated, "the file could not be dated back: errno \(errno)")
        let inRenameStep = DispatchSemaphore(value: 0)
        DispatchQueue.global().async(group: group) { [self] in
            do {
                // Asked on the disk queue, then in the rename's step, under the count's lock.
                try disk.store(
                    bytes, pixelSize: pixelSize, for: url,
                    isDropped: { [renameCalls] in
                        guard
                            renameCalls.withLock({ calls in
                                calls += 1
                                return calls
                            }) == 2
                        else { return false }
                        inRenameStep.signal()
                        while (DiskStore.modificationDate(atPath: path) ?? .distantPast) < Date() - 1800 {
                            usleep(1000)
                        }
                        // The read that dated the file is followed at once by a look at the path (a file renamed
                        // there meanwhile is read again: DiskStore.stored(for:)), then by the removal, which
                        // waits for this step's lock. Renamed before that look, the load read the good file: a
                        // whole-suite ThreadSanitizer run did once, its thread held up between the two.
                        usleep(200_000)
                        return false
                    })
            } catch {
                failure.withLock { $0 = error }
            }
        }
        if inRenameStep.wait(timeout: .now() + 30) == .timedOut {
            Issue.record("the good file's commit never reached its rename")
        }
    }

    /// Waits for the commit, which must have renamed without an error.
    func finish() {
        group.wait()
        #expect(failure.withLock { $0 } == nil)
        #expect(renameCalls.withLock { $0 } == 2)
    }
}

/// The real decoder, except that `damaged` fails as corrupt, after running `onDamaged` once.
final class DamagedBytesDecoder: ImageDecoding {
    let damaged: Data
    let onDamaged = LockedBox<(@Sendable () -> Void)?>(nil)

    init(damaged: Data) {
        self.damaged = damaged
    }

    func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
        guard data == damaged else { return try ImageDecoders.Default().decode(data, context: context) }
        let hook = onDamaged.withLock { hook in
            defer { hook = nil }
            return hook
        }
        hook?()
        throw ImageDecodingError(format: .jpeg, reason: .corrupt("damaged on disk"))
    }
}
