import Foundation
import Testing

@testable import AsyncImageCache

/// A load delivers its image without waiting for the disk queue: its bytes are written to the disk tier
/// in the background, and ``ImageStore/waitForDiskMaintenance()`` waits for them.
@Suite(.timeLimit(.minutes(4))) struct ImageStoreDiskCommitTests {
    /// The disk queue held by another write's commit (as a commit, a trim listing thousands of files, or
    /// a `removeAll()` of another store on the folder holds it): the load is delivered meanwhile, served
    /// from memory, and its file is in place once the queue is let go.
    @Test func aLoadIsDeliveredWhileTheDiskQueueIsHeld() async throws {
        let fixture = try await Fixture("disk-commit-held")
        defer { fixture.server.stop() }
        let (store, url, bytes) = (try fixture.store(), fixture.url, fixture.bytes)

        // Another write holds the disk queue in its commit step until the load returns.
        let gate = try await Self.holdDiskQueue(of: store.disk)
        let isLetGo = LockedBox(false)
        let letGo: @Sendable () -> Void = {
            let first = isLetGo.withLock { isLetGo -> Bool in
                defer { isLetGo = true }
                return !isLetGo
            }
            if first { gate.signal() }
        }
        let started = Date()
        let load = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 32)) }
        // Decoded, and its original in memory: all that is left is the disk write, then the delivery. Before,
        // the delivery waited for the queue; the safety net lets it go so that the test ends. It is long, as
        // the delivery may wait that long for a thread when the whole suite runs under ThreadSanitizer
        // (once more than 30 s).
        try await waitUntil { store.originals.value(forKey: url.cacheKey) != nil }
        DispatchQueue.global().asyncAfter(deadline: .now() + 150) { letGo() }

        let image = try await load.value
        let seconds = Date().timeIntervalSince(started)
        let wasLetGo = isLetGo.withLock { $0 }
        #expect(
            !wasLetGo,
            "image(for:) returned only once the disk queue was let go, after \(String(format: "%.2f", seconds)) s")
        #expect(image.pixelSize == PixelSize(width: 32, height: 24))
        // Memory serves the bytes and the size while the file waits for the queue.
        #expect(store.cachedOriginalBytes(for: url)?.data == bytes)
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 64, height: 48))
        #expect(!store.disk.contains(url), "committed while the disk queue was held")

        letGo()
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == bytes, "the load's bytes are not on disk after waitForDiskMaintenance()")
        #expect(store.disk.pixelSize(for: url) == PixelSize(width: 64, height: 48))
        #expect(store.disk.data(for: Self.heldURL) == Data([1, 2, 3]))
        #expect(!store.diskFileNames.contains { $0.hasPrefix(".tmp-") }, "\(store.diskFileNames)")
    }

    /// A load's write still queued when `removeAll()` runs is dropped, or removed by it: never in place after it.
    @Test func aWriteQueuedBeforeRemoveAllDoesNotLandAfterIt() async throws {
        let fixture = try await Fixture("disk-commit-remove-all")
        defer { fixture.server.stop() }
        let (store, url) = (try fixture.store(), fixture.url)
        let gate = try await Self.holdDiskQueue(of: store.disk)
        let safety = DispatchWorkItem { gate.signal() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: safety)
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 32))
        #expect(image.pixelSize.width == 32)
        let generation = store.disk.generation
        // On a thread of its own: removeAll() blocks behind the held commit, and on one of Swift's threads (two
        // on a 2-core machine) it left the whole test process one, which another test's parked read took.
        // Every task then waited for this test's 60 s safety net (the HTTP tests stalled, one timed out).
        let removal = Task { await onOwnThread { store.removeAll() } }
        // removeAll() waits behind the held commit; the load's write is queued too.
        try await Task.sleep(for: .milliseconds(100))
        safety.cancel()
        gate.signal()
        await removal.value
        #expect(store.disk.generation == generation + 1)
        store.waitForDiskMaintenance()
        #expect(store.diskFileNames.isEmpty, "removeAll() ran, yet the disk tier holds \(store.diskFileNames)")
        #expect(store.cachedOriginalBytes(for: url) == nil)
        #expect(store.cachedPixelSize(for: url) == nil)
    }

    /// The bytes waiting for the disk are bounded: with the folder's queue held and one write waiting, a
    /// write that would take the waiting bytes past the limit is not queued (the store then writes it on
    /// the load's thread, as before writes went to the background); once the queue moves, writes queue again.
    @Test func writesWaitingForTheDiskAreBoundedInBytes() async throws {
        let folder = TemporaryDirectory("disk-commit-backlog")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20, backgroundWriteByteLimit: 10)
        let gate = try await Self.holdDiskQueue(of: disk)
        func url(_ name: String) -> URL { URL(string: "https://images.example.com/\(name).jpg")! }
        func queue(_ name: String, bytes: Int) -> Bool {
            disk.storeInBackground(
                Data(repeating: 7, count: bytes), pixelSize: PixelSize(width: 1, height: 1), metadata: nil,
                for: url(name), generation: disk.generation, isCurrent: { true })
        }
        #expect(queue("a", bytes: 20), "a write is queued whatever its size when none waits")
        #expect(!queue("b", bytes: 1), "queued past the limit while 20 bytes wait for the disk")
        gate.signal()
        disk.waitForPendingTrims()
        #expect(queue("c", bytes: 6))
        #expect(queue("d", bytes: 4))
        disk.waitForPendingTrims()
        #expect(disk.data(for: url("a"))?.count == 20)
        #expect(disk.data(for: url("b")) == nil)
        #expect(disk.data(for: url("c"))?.count == 6)
        #expect(disk.data(for: url("d"))?.count == 4)
    }

    /// The bytes waiting for the disk count the caching facts each write holds beside its image: a server's
    /// validators may be as long as a header line (libcurl takes 100 KB), far more than a small image.
    @Test func writesWaitingForTheDiskCountTheirCachingFacts() async throws {
        let folder = TemporaryDirectory("disk-commit-facts")
        let limit = 1 << 20
        let disk = DiskStore(directory: folder.url, byteLimit: 64 << 20, backgroundWriteByteLimit: limit)
        let gate = try await Self.holdDiskQueue(of: disk)
        defer { gate.signal() }  // once more when the test ends early: the semaphore is waited on once
        let tag = "\"" + String(repeating: "x", count: 60_000) + "\""
        let metadata = HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 3600, entityTag: tag), receivedAt: Date())
        let image = Data(repeating: 7, count: 500)
        var held = 0
        for index in 0..<100 {
            let queued = disk.storeInBackground(
                image, pixelSize: PixelSize(width: 1, height: 1), metadata: metadata,
                for: URL(string: "https://images.example.com/\(index).jpg")!, generation: disk.generation,
                isCurrent: { true })
            if queued { held += image.count + tag.utf8.count }
        }
        #expect(held <= limit, "the writes waiting for the disk hold \(held) bytes of images and validators")
        #expect(held > limit / 2)
        gate.signal()
        disk.waitForPendingTrims()
    }

    /// A write waiting for the disk is read as its file would be, and a removal of the URL's file drops it:
    /// neither read nor put in place after the removal (bytes a load found damaged, or a response said not to
    /// store, would otherwise come back). A write queued after the removal lands.
    @Test func aRemovalDropsTheWritesQueuedBeforeIt() async throws {
        let folder = TemporaryDirectory("disk-commit-drop")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let url = URL(string: "https://images.example.com/a.jpg")!
        let metadata = HTTPCacheMetadata(policy: HTTPCachePolicy(), receivedAt: Date())
        let gate = try await Self.holdDiskQueue(of: disk)
        func queue(_ byte: UInt8) -> Bool {
            disk.storeInBackground(
                Data(repeating: byte, count: 8), pixelSize: PixelSize(width: Int(byte), height: 1), metadata: metadata,
                for: url, generation: disk.generation, isCurrent: { true })
        }
        #expect(queue(1))
        #expect(queue(2))
        #expect(disk.data(for: url) == Data(repeating: 2, count: 8), "the latest write is read as its file")
        #expect(disk.pixelSize(for: url) == PixelSize(width: 2, height: 1))
        #expect(disk.cacheMetadata(for: url) == metadata)
        disk.remove(url)
        #expect(disk.data(for: url) == nil)
        #expect(disk.pixelSize(for: url) == nil)
        #expect(disk.cacheMetadata(for: url) == nil)
        gate.signal()
        disk.waitForPendingTrims()
        #expect(!disk.contains(url), "a write queued before the removal landed after it")

        let held = try await Self.holdDiskQueue(of: disk)
        #expect(queue(3))
        disk.remove(url)
        #expect(queue(4))
        #expect(disk.data(for: url) == Data(repeating: 4, count: 8))
        held.signal()
        disk.waitForPendingTrims()
        #expect(disk.data(for: url) == Data(repeating: 4, count: 8))
        #expect(disk.pixelSize(for: url) == PixelSize(width: 4, height: 1))
    }

    /// A write dropped by a removal of its URL's file makes no room: the files it would have pushed out of the
    /// budget stay. Before, its commit trimmed the folder first and asked whether it was dropped only at the
    /// rename, so a file it never replaced went for nothing.
    @Test func aDroppedWriteMakesNoRoom() async throws {
        let folder = TemporaryDirectory("disk-commit-dropped-trim")
        let (keptBytes, droppedBytes) = (Data(repeating: 9, count: 60), Data(repeating: 1, count: 50))
        // Room for the kept file and the held write's, but one byte short of the dropped write's as well.
        let budget =
            try CountedSize.ofStored(keptBytes) + CountedSize.ofStored(Data([1, 2, 3]))
            + CountedSize.ofStored(droppedBytes) - 1
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        let kept = URL(string: "https://images.example.com/kept.jpg")!
        let url = URL(string: "https://images.example.com/a.jpg")!
        try disk.store(keptBytes, pixelSize: PixelSize(width: 1, height: 1), for: kept)
        try await Self.queueAndRemove(droppedBytes, for: url, on: disk)
        #expect(disk.data(for: kept)?.count == 60, "the dropped write's commit trimmed the folder to make room")
        #expect(disk.data(for: Self.heldURL) == Data([1, 2, 3]))
    }

    /// A write dropped by a removal of its URL's file makes no room on a full file system either: the least
    /// recently used entries stay. Before, the write that ran out of space had them removed first (the
    /// makeRoom of ``DiskStore/store(_:pixelSize:metadata:for:generation:isCurrent:committed:isDropped:)``), and
    /// was dropped only at its rename.
    @Test(.enabled(if: ScratchFileSystem.isAvailable, "needs root to mount a tmpfs"))
    func aDroppedWriteMakesNoRoomOnAFullFileSystem() async throws {
        let volume = try ScratchFileSystem(byteCount: 1024 * 1024)
        let folder = volume.url.appendingPathComponent("store", isDirectory: true)
        let disk = DiskStore(directory: folder, byteLimit: 10 << 20)
        let one = PixelSize(width: 1, height: 1)
        let urls = (0..<4).map { URL(string: "https://images.example.com/\($0).jpg")! }
        for (index, url) in urls.enumerated() {
            try disk.store(Data(repeating: UInt8(index), count: 200 * 1024), pixelSize: one, for: url)
        }
        // Runs out of space, then waits for the held disk queue to make room.
        try await Self.queueAndRemove(
            Data(repeating: 9, count: 300 * 1024), for: URL(string: "https://images.example.com/a.jpg")!, on: disk)
        for (index, url) in urls.enumerated() {
            #expect(disk.contains(url), "entry \(index) was removed to make room for a dropped write")
        }
    }

    /// A write larger than the budget takes its URL's older copy with it only as its commit would replace it:
    /// dropped by a removal of the file, or queued before a `removeAll()`, it leaves what was put in place
    /// since (here a write on the caller's thread, as a load writes while the queue holds its limit). Before,
    /// it removed that newer file.
    @Test func aDroppedWriteTooLargeForTheBudgetLeavesANewerFile() async throws {
        let folder = TemporaryDirectory("disk-commit-dropped-too-large")
        let attributes = PixelSizeWriteGate()
        // Room for a few files of 8 or 10 bytes; 200 bytes were over it, twice the budget is now.
        let budget = try CountedSize.ofStored(Data(repeating: 7, count: 10)) * 4
        let tooLarge = budget * 2
        let disk = DiskStore(directory: folder.url, byteLimit: budget, attributes: attributes)
        func url(_ name: String) -> URL { URL(string: "https://images.example.com/\(name).jpg")! }
        func queue(_ byte: UInt8, count: Int, for url: URL) -> Bool {
            disk.storeInBackground(
                Data(repeating: byte, count: count), pixelSize: PixelSize(width: 1, height: 1), metadata: nil,
                for: url, generation: disk.generation, isCurrent: { true })
        }
        func write(_ byte: UInt8, for url: URL) throws {
            try disk.store(Data(repeating: byte, count: 8), pixelSize: PixelSize(width: 1, height: 1), for: url)
        }
        // Another write holds the folder's write queue before its commit; the disk queue stays free.
        attributes.gate.arm()
        #expect(queue(7, count: 10, for: url("other")))
        try await waitUntil { attributes.gate.parkedCount == 1 }
        defer { attributes.gate.open() }  // once more when the test ends early

        // Queued before a `removeAll()`; a newer file lands before it runs.
        #expect(queue(1, count: tooLarge, for: url("a")))
        disk.removeAll()
        try write(2, for: url("a"))
        // Dropped by a removal of its file; a newer file lands before it runs.
        #expect(queue(3, count: tooLarge, for: url("b")))
        disk.remove(url("b"))
        try write(4, for: url("b"))

        attributes.gate.open()
        disk.waitForPendingTrims()
        #expect(
            disk.data(for: url("a")) == Data(repeating: 2, count: 8),
            "a write of before removeAll() removed a newer file")
        #expect(
            disk.data(for: url("b")) == Data(repeating: 4, count: 8), "a dropped write removed the file put after it")
    }

    /// A store opened on the folder while a load's write still waits for the disk finds the image, as after a
    /// relaunch: the stores of this process on that folder share its queued writes, which reads find until
    /// they land. Before, it missed the file and downloaded the image a second time.
    @Test func aStoreOpenedOnTheFolderFindsTheWritesOfAnotherStore() async throws {
        let fixture = try await Fixture("disk-commit-reopen")
        defer { fixture.server.stop() }
        let (first, url, server) = (try fixture.store(), fixture.url, fixture.server)
        let gate = try await Self.holdDiskQueue(of: first.disk)
        _ = try await first.image(for: ImageRequest(url: url, targetWidth: 32))
        // The load's write waits behind the held queue, let go after 0.3 s: the second store opens and loads meanwhile.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { gate.signal() }
        let second = try fixture.store()
        _ = try await second.image(for: ImageRequest(url: url, targetWidth: 20))
        #expect(try await server.hits(for: "/images/a.jpg") == 1)
        #expect(second.statistics.diskHits == 1)
    }

    /// After a `clearMemory()` (a memory warning), a load's bytes that still wait for the disk are found as
    /// if their file were in place: the size and the bytes answer at once, and the next load reads them
    /// instead of downloading the image again. Before, all three missed until the write landed.
    @Test func bytesWaitingForTheDiskAreFoundAfterClearMemory() async throws {
        let fixture = try await Fixture("disk-commit-clear-memory")
        defer { fixture.server.stop() }
        let (store, url, bytes) = (try fixture.store(), fixture.url, fixture.bytes)
        let gate = try await Self.holdDiskQueue(of: store.disk)
        defer { gate.signal() }  // once more when the test ends early: the semaphore is waited on once
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 32))

        store.clearMemory()
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 64, height: 48))
        store.clearMemory()
        #expect(store.cachedOriginalBytes(for: url)?.data == bytes)
        store.clearMemory()
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 20))
        #expect(image.pixelSize == PixelSize(width: 20, height: 15))
        #expect(try await fixture.server.hits(for: "/images/a.jpg") == 1, "downloaded again")
        #expect(store.statistics.diskHits == 1)
        #expect(!store.disk.contains(url), "committed while the disk queue was held")

        gate.signal()
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: url) == bytes)
        #expect(store.disk.pixelSize(for: url) == PixelSize(width: 64, height: 48))
    }

    /// The caching facts of bytes waiting for the disk come with them: after a `clearMemory()`, an image the
    /// server marked `no-cache` is revalidated by the load that reads them. Before, the load found no file,
    /// downloaded the image whole again, and the server answered `[200, 200]` where `[200, 304]` is due.
    @Test func cachingFactsOfBytesWaitingForTheDiskAreFoundAfterClearMemory() async throws {
        let fixture = try await Fixture("disk-commit-clear-memory-facts")
        defer { fixture.server.stop() }
        let store = try fixture.store()
        let url = fixture.server.url("/cache/no-cache/images/a.jpg")
        let gate = try await Self.holdDiskQueue(of: store.disk)
        defer { gate.signal() }  // once more when the test ends early: the semaphore is waited on once
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 32))

        store.clearMemory()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 20))
        // The revalidation waits for the writes queued before it, so that its answer applies to the file.
        gate.signal()
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        store.waitForDiskMaintenance()
        #expect(try await fixture.server.statuses(for: "/cache/no-cache/images/a.jpg") == [200, 304])
        #expect(store.statistics.revalidations == 1)
        #expect(store.disk.data(for: url) == fixture.bytes)
    }

    /// A program that ends right after a load (a command-line tool, as the Linux guide shows one) still
    /// leaves the load's file: its exit waits for the writes that loads queued. The child process holds
    /// the disk queue, and lets it go 2 seconds after its last line (its exit waits up to 10): before,
    /// it ended at once with the write still queued, no file was left, and the next run downloaded the
    /// image again.
    @Test func aLoadsWriteLandsWhenTheProgramExitsRightAfterIt() async throws {
        // The image comes from this process's loopback server, as the child's download.
        let fixture = try await Fixture("disk-commit-exit")
        defer { fixture.server.stop() }
        let (root, bytes, url) = (fixture.folder, fixture.bytes, fixture.url)
        await #expect(processExitsWith: .success) { [path = root.url.path as String, url = url as URL] in
            let store = try ImageStore.makeForTesting(root: URL(fileURLWithPath: path))
            let gate = try await Self.holdDiskQueue(of: store.disk)
            _ = try await store.image(for: ImageRequest(url: url, targetWidth: 32))
            DispatchQueue.global().asyncAfter(deadline: .now() + 2) { gate.signal() }
        }
        #expect(try await fixture.server.hits(for: "/images/a.jpg") == 1)
        let store = try ImageStore.makeForTesting(root: root.url)
        #expect(store.disk.data(for: url) == bytes, "the program exited, and the load's file is not in the folder")
        #expect(store.disk.pixelSize(for: url) == PixelSize(width: 64, height: 48))
    }

    /// A child forked without `exec` while a write was queued (a server that forks its workers, a tool that
    /// forks to daemonize) exits at once: the write is its parent's, and no thread of the child ever runs
    /// the disk queue. Before, its exit waited the whole 10 s for it (or for good, when the fork came while
    /// another thread held one of the disk tier's locks); the child here is waited for 5 s, then killed.
    @Test func aChildForkedWhileAWriteIsQueuedExitsWithoutWaitingForIt() async throws {
        let root = TemporaryDirectory("disk-commit-fork")
        let bytes = try SampleImages.jpeg(width: 64, height: 48)
        await #expect(processExitsWith: .success) { [path = root.url.path as String, bytes = bytes as Data] in
            let store = try ImageStore.makeForTesting(root: URL(fileURLWithPath: path)) {
                $0.dataLoader = FixedBytesLoader(bytes: bytes)
            }
            let gate = try await Self.holdDiskQueue(of: store.disk)
            _ = try await store.image(
                for: ImageRequest(url: URL(string: "https://images.example.com/fork.jpg")!, targetWidth: 32))
            let child = fork()
            if child == 0 { exit(0) }
            // Waited for up to 5 s, then ended: before the fix, its exit waited 10 s for the write.
            var status: Int32 = 0
            var waited = child > 0 ? waitpid(child, &status, WNOHANG) : -1
            for _ in 0..<500 where waited == 0 {
                usleep(10_000)
                waited = waitpid(child, &status, WNOHANG)
            }
            if waited == 0 {
                kill(child, SIGKILL)
                waited = waitpid(child, &status, 0)
            }
            gate.signal()  // this process's own exit waits for the write
            guard waited == child else { exit(2) }
            // Exited with 0, not ended by `SIGKILL`.
            exit(status & 0x7f == 0 && (status >> 8) & 0xff == 0 ? 0 : 1)
        }
    }

    /// A 64x48 JPEG served on loopback at ``url``, and a folder for stores' disk tiers.
    struct Fixture {
        let folder: TemporaryDirectory
        let images: TemporaryDirectory
        let bytes: Data
        let server: TestHTTPServer
        var url: URL { server.url("/images/a.jpg") }

        init(_ name: String) async throws {
            folder = TemporaryDirectory(name)
            images = TemporaryDirectory(name + "-images")
            bytes = try SampleImages.jpeg(width: 64, height: 48)
            try bytes.write(to: images.url.appendingPathComponent("a.jpg"))
            server = try await TestHTTPServer(serving: images.url)
        }

        /// A store on ``folder``; each call opens another on the same folder.
        func store() throws -> ImageStore { try ImageStore.makeForTesting(root: folder.url) }
    }

    /// Queues a background write of `data` for `url` while `disk`'s queue is held, removes `url`'s file, lets
    /// the queue go and waits for it: the write, dropped by the removal, must not be in place.
    static func queueAndRemove(_ data: Data, for url: URL, on disk: DiskStore) async throws {
        let gate = try await holdDiskQueue(of: disk)
        defer { gate.signal() }  // once more when the test ends early: the semaphore is waited on once
        let queued = disk.storeInBackground(
            data, pixelSize: PixelSize(width: 1, height: 1), metadata: nil, for: url, generation: disk.generation,
            isCurrent: { true })
        #expect(queued)
        disk.remove(url)
        gate.signal()
        disk.waitForPendingTrims()
        #expect(!disk.contains(url), "a write queued before the removal landed after it")
    }

    /// The URL of the write that ``holdDiskQueue(of:)`` holds.
    static let heldURL = URL(string: "https://images.example.com/held.jpg")!

    /// Starts a write of 3 bytes for ``heldURL`` that holds `disk`'s folder queue in its commit step, as a
    /// commit, a trim or a `removeAll()` holds it, until the returned semaphore is signalled; returns once
    /// it holds it.
    static func holdDiskQueue(of disk: DiskStore) async throws -> DispatchSemaphore {
        let gate = DispatchSemaphore(value: 0)
        let isHolding = LockedBox(false)
        // On a thread of its own, not one of dispatch's global threads, which Swift's tasks run on as well.
        Thread.detachNewThread {
            try? disk.store(
                Data([1, 2, 3]), pixelSize: PixelSize(width: 1, height: 1), for: heldURL,
                committed: {
                    isHolding.withLock { $0 = true }
                    gate.wait()
                })
        }
        try await waitUntil { isHolding.withLock { $0 } }
        return gate
    }
}

/// A loader that answers every URL with `bytes`.
struct FixedBytesLoader: DataLoading {
    let bytes: Data

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data { bytes }
}
