import Foundation
import Spawn
import Testing

@testable import AsyncImageCache

@Suite struct DiskStoreTests {
    let url = URL(string: "https://images.example.com/photo.jpg?size=large")!

    @Test func filesAreNamedByTheSHA256OfTheURLString() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        #expect(disk.fileURL(for: url).lastPathComponent == SHA256.hexDigest(of: url.absoluteString))
        #expect(
            disk.fileURL(for: URL(string: "abc")!).lastPathComponent
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    /// A sparse file of the largest size there is, which another program left in the folder (tmpfs allows
    /// it), counts as 2^48 bytes: far past the budget, so the next trim removes it first, and the files
    /// stored stay. Before, its size added to another's overflowed, and the process ended.
    @Test(.enabled(if: ScratchFileSystem.sharedMemoryIsTmpfs, "needs /dev/shm on a tmpfs"))
    func aForeignFileOfTheLargestSizeCountsLargeNotAsAnOverflow() throws {
        let folder = URL(fileURLWithPath: "/dev/shm/aic-disk-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let disk = DiskStore(directory: folder, byteLimit: 1 << 20)
        let bytes = Data((0..<1000).map { UInt8($0 % 251) })
        try disk.store(bytes, pixelSize: PixelSize(width: 1024, height: 768), for: url)
        let foreign = disk.directoryPath + "foreign.bin"
        let descriptor = open(foreign, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try #require(descriptor >= 0, "open: \(String(cString: strerror(errno)))")
        let sized = ftruncate(descriptor, off_t.max)
        close(descriptor)
        try #require(sized == 0, "ftruncate to \(off_t.max) bytes: \(String(cString: strerror(errno)))")

        // Counted as 2^48 bytes (256 TiB), beside the stored file's.
        let stored = try #require(DiskStore.fileSize(atPath: disk.fileURL(for: url).path))
        #expect(disk.totalByteCount == 1 << 48 + stored)
        disk.trim()
        #expect(!FileManager.default.fileExists(atPath: foreign))
        #expect(disk.data(for: url) == bytes)
    }

    @Test func storedBytesComeBackWithTheirPixelSizeAttribute() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let bytes = Data((0..<1000).map { UInt8($0 % 251) })
        try disk.store(bytes, pixelSize: PixelSize(width: 1024, height: 768), for: url)
        #expect(disk.data(for: url) == bytes)
        #expect(disk.pixelSize(for: url) == PixelSize(width: 1024, height: 768))
        let raw = FileExtendedAttributes().value(named: PixelSizeAttribute.name, atPath: disk.fileURL(for: url).path)
        #expect(raw == [0x00, 0x04, 0, 0, 0x00, 0x03, 0, 0])  // two little-endian Int32
        // Only the final file is left: the temporary was renamed into place.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == [
                disk.fileURL(for: url).lastPathComponent
            ])
    }

    /// A header read of a stored file (a size lookup whose attribute was lost) leaves the file's access
    /// time as it is: after a change to its attributes the file system would otherwise write a new one, a
    /// sixth of that lookup's time. A plain read of a copy with the same dates does date its access here.
    @Test func aHeaderReadLeavesTheFilesAccessTimeAlone() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let bytes = try SampleImages.jpeg(width: 64, height: 48)
        try disk.store(bytes, pixelSize: PixelSize(width: 64, height: 48), for: url)
        let stored = disk.fileURL(for: url).path
        let elsewhere = TemporaryDirectory("plain")
        let copy = elsewhere.url.appendingPathComponent("copy.jpg").path
        try bytes.write(to: URL(fileURLWithPath: copy))
        let longAgo = 1_000_000
        for path in [stored, copy] {
            // Read long ago, modified later: a read now is one the file system dates (relatime, strictatime).
            var times = [timespec(tv_sec: longAgo, tv_nsec: 0), timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]  // UTIME_OMIT
            try #require(utimensat(AT_FDCWD, path, &times, 0) == 0)
        }
        func accessTime(_ path: String) -> Int {
            var status = stat()
            return stat(path, &status) == 0 ? status.st_atim.tv_sec : -1
        }
        let descriptor = open(copy, O_RDONLY)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(read(descriptor, &buffer, buffer.count) == 16)
        close(descriptor)
        #expect(accessTime(copy) > longAgo, "a plain read did not date the copy's access: nothing to compare with")

        let header = disk.headerPixelSize(forKey: url.cacheKey) { ImageStore.readHeader(from: $0)?.displaySize }
        #expect(header?.size == PixelSize(width: 64, height: 48))
        #expect(accessTime(stored) == longAgo)
    }

    /// A size repaired from a file read earlier goes onto that file only: once another write has
    /// replaced it, the new file keeps its own size.
    @Test func aRepairIsWrittenOnlyOntoTheFileItWasReadFrom() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let (old, new) = (PixelSize(width: 4, height: 3), PixelSize(width: 5, height: 7))
        try disk.store(Data([1]), pixelSize: old, for: url)
        let read = try #require(disk.file(for: url))
        let header = disk.headerPixelSize(forKey: url.cacheKey) { $0(16).map { _ in old } }
        #expect(try #require(header).file == read.identity)
        try disk.store(Data([2]), pixelSize: new, for: url)  // another store's write, in its place

        #expect(!disk.setPixelSize(old, for: url, readFrom: read.identity))
        #expect(disk.pixelSize(for: url) == new)
        let current = try #require(disk.file(for: url))
        #expect(disk.setPixelSize(PixelSize(width: 6, height: 6), for: url, readFrom: current.identity))
        #expect(disk.pixelSize(for: url) == PixelSize(width: 6, height: 6))
    }

    @Test func aFileSystemThatRefusesAttributesStillGetsTheBytes() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20, attributes: RefusingAttributes())
        try disk.store(Data([1, 2, 3]), pixelSize: PixelSize(width: 2, height: 2), for: url)
        #expect(disk.data(for: url) == Data([1, 2, 3]))
        #expect(disk.pixelSize(for: url) == nil)
        #expect(!disk.setPixelSize(PixelSize(width: 2, height: 2), for: url))
    }

    /// ext4 refuses an attribute past about 4 KB (one block for all of a file's attributes), and an
    /// entity tag can be longer: the attribute then goes without its validators rather than not at all,
    /// so `max-age=0` still makes the entry stale, on writing it and on refreshing it after a 304.
    /// Before, the entry had no attribute and counted as fresh until evicted.
    @Test func cachingFactsTooLongForTheFileSystemKeepTheirFreshnessWithoutTheValidators() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20, attributes: SmallAttributes())
        let longTag = "\"" + String(repeating: "e", count: 5000) + "\""
        let stale = HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 0, entityTag: longTag, lastModified: "x"))
        try disk.store(Data([1, 2, 3]), pixelSize: PixelSize(width: 2, height: 2), metadata: stale, for: url)
        let written = try #require(disk.cacheMetadata(for: url))
        #expect(written.cacheControlLifetime == 0)
        #expect(written.isStale())
        #expect(written.entityTag == nil && written.lastModified == nil)
        #expect(disk.pixelSize(for: url) == PixelSize(width: 2, height: 2))

        let fresh = HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 3600, entityTag: longTag))
        disk.setCacheMetadata(fresh, for: url)
        let refreshed = try #require(disk.cacheMetadata(for: url))
        #expect(refreshed.cacheControlLifetime == 3600 && !refreshed.isStale())
        #expect(refreshed.entityTag == nil)

        // Validators that fit are kept.
        let short = HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 0, entityTag: "\"short\""))
        disk.setCacheMetadata(short, for: url)
        #expect(disk.cacheMetadata(for: url)?.entityTag == "\"short\"")
    }

    /// A write can be refused in the step that commits it, and what `committed` does happens in that step,
    /// with the file in place: how a revalidation's new image and the count of replacements go in together.
    @Test func aCommitAsksWhetherTheBytesAreStillCurrentAndRunsItsFollowUpWithTheFileInPlace() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let size = PixelSize(width: 2, height: 2)
        try disk.store(Data([1]), pixelSize: size, for: url)
        #expect(throws: POSIXError(.ECANCELED)) {
            try disk.store(Data([2]), pixelSize: size, for: url, isCurrent: { false }, committed: { Issue.record() })
        }
        #expect(disk.data(for: url) == Data([1]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).count == 1)  // no temporary left

        var seen: Data?
        try disk.store(Data([3]), pixelSize: size, for: url, isCurrent: { true }) { seen = disk.data(for: url) }
        #expect(seen == Data([3]))

        #expect(!disk.remove(url, generation: disk.generation + 1) { Issue.record() })
        #expect(disk.data(for: url) == Data([3]))
        var existed: Bool?
        #expect(disk.remove(url, generation: disk.generation) { existed = disk.data(for: url) != nil })
        #expect(existed == false)
    }

    @Test func malformedAttributesReadAsMissing() {
        #expect(PixelSizeAttribute.decode([1, 2, 3]) == nil)
        #expect(PixelSizeAttribute.decode(PixelSizeAttribute.encode(PixelSize(width: 0, height: 5))) == nil)
        #expect(
            PixelSizeAttribute.decode(PixelSizeAttribute.encode(PixelSize(width: 6000, height: 4000)))
                == PixelSize(width: 6000, height: 4000))
    }

    @Test func trimRemovesTheLeastRecentlyReadFilesFirst() throws {
        let folder = TemporaryDirectory("disk")
        let writer = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let urls = try storeThreeAgedFiles(in: writer)
        writer.waitForPendingTrims()
        // The same folder with a budget of two and a half files: the three are over it. Reading the oldest
        // file makes it the most recently used, so the second oldest goes.
        let budget = try CountedSize.ofStored(byteCount: 1000) * 5 / 2
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        #expect(disk.data(for: urls[0]) != nil)
        disk.trim()
        #expect(disk.contains(urls[0]))
        #expect(!disk.contains(urls[1]))
        #expect(disk.contains(urls[2]))
        #expect(disk.totalByteCount <= budget)
    }

    /// A file larger than the whole budget (written under a larger one, by an older version of the app, or
    /// put there by hand) goes in any trim, however recently used: the trim went through the colder files
    /// first, removed every one of them, and then that file too, emptying the tier. It now goes first, and
    /// the files that fit the budget stay.
    @Test func aFileLargerThanTheBudgetGoesBeforeTheColderFilesThatFit() throws {
        let folder = TemporaryDirectory("disk")
        let writer = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let small = try storeThreeAgedFiles(in: writer)
        let large = URL(string: "https://example.com/large.jpg")!
        try writer.store(Data(repeating: 9, count: 100_000), pixelSize: PixelSize(width: 1, height: 1), for: large)
        try setLastUsed(of: writer.fileURL(for: large), secondsAgo: 10)
        writer.waitForPendingTrims()

        // Room for the three small files, not for the large one.
        let budget = try CountedSize.ofStored(byteCount: 1000) * 4
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        disk.trim()
        #expect(!disk.contains(large))
        #expect(small.filter { disk.contains($0) } == small, "the files within the budget stay")
        #expect(disk.totalByteCount <= budget)
    }

    /// What a memory hit asks: the file is dated on the disk queue; nothing is made where there is no
    /// file, and a link in a file's place is dated itself, never what it points at.
    @Test func markingAFileUsedDatesItAndNothingElse() throws {
        let folder = TemporaryDirectory("disk")
        let outside = TemporaryDirectory("outside")
        let target = outside.url.appendingPathComponent("keep.jpg")
        try Data([7]).write(to: target)
        try setLastUsed(of: target, secondsAgo: 3600)
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        try setLastUsed(of: disk.fileURL(for: url), secondsAgo: 3600)
        let linked = URL(string: "https://example.com/linked.jpg")!
        try FileManager.default.createSymbolicLink(at: disk.fileURL(for: linked), withDestinationURL: target)
        let missing = URL(string: "https://example.com/missing.jpg")!

        for url in [url, linked, missing] { disk.markUsed(url) }
        disk.waitForPendingTrims()
        let lastUsed = try #require(disk.entries().first?.lastUsed)
        #expect(lastUsed.timeIntervalSinceNow > -1800)  // dated now, not an hour ago
        let targetDate = try #require(
            FileManager.default.attributesOfItem(atPath: target.path)[.modificationDate] as? Date)
        #expect(targetDate.timeIntervalSinceNow < -1800)  // still an hour ago
        #expect(!disk.contains(missing))
    }

    /// A file dated in the future (a clock set back, a file copied in) would be the newest for good: a
    /// trim dates it now, and it ages from there like the others.
    @Test func aFileDatedInTheFutureAgesFromTheNextTrim() throws {
        let folder = TemporaryDirectory("disk")
        let writer = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let (future, other) = (
            URL(string: "https://example.com/future.jpg")!, URL(string: "https://example.com/b.jpg")!
        )
        for url in [future, other] {
            try writer.store(Data(repeating: 1, count: 1000), pixelSize: PixelSize(width: 1, height: 1), for: url)
        }
        writer.waitForPendingTrims()
        let start = Date()
        let day: TimeInterval = 24 * 3600
        try setDate(of: writer.fileURL(for: future), to: start.addingTimeInterval(365 * day))
        try setDate(of: writer.fileURL(for: other), to: start.addingTimeInterval(-3600))
        writer.trim(now: start)  // within the budget: nothing goes
        #expect(writer.entries().count == 2)

        // A day later the other file is read; then a trim with room for one file keeps that one.
        try setDate(of: writer.fileURL(for: other), to: start.addingTimeInterval(day))
        let disk = DiskStore(directory: folder.url, byteLimit: try CountedSize.ofStored(byteCount: 1000) * 3 / 2)
        disk.trim(now: start.addingTimeInterval(day + 60))
        #expect(!disk.contains(future))
        #expect(disk.contains(other))
    }

    /// Expiry, like a trim, dates a file dated in the future now, so that it expires in its turn; it
    /// was kept for good by a store that only reads and expires (no write, so no trim).
    @Test func aFileDatedInTheFutureExpiresInItsTurn() throws {
        let folder = TemporaryDirectory("disk")
        let writer = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let url = URL(string: "https://example.com/future.jpg")!
        try writer.store(Data(repeating: 1, count: 1000), pixelSize: PixelSize(width: 1, height: 1), for: url)
        writer.waitForPendingTrims()
        let start = Date()
        try setDate(of: writer.fileURL(for: url), to: start.addingTimeInterval(365 * 24 * 3600))
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        #expect(disk.removeEntries(unusedFor: 3600, now: start.addingTimeInterval(60)) == 0)
        #expect(disk.contains(url))
        #expect(disk.removeEntries(unusedFor: 3600, now: start.addingTimeInterval(7200)) == 1)
        #expect(!disk.contains(url))
    }

    @Test func writesTrimInTheBackgroundToTheBudget() throws {
        let folder = TemporaryDirectory("disk")
        let unit = try CountedSize.ofStored(Data(repeating: 7, count: 1000))
        let disk = DiskStore(directory: folder.url, byteLimit: unit * 10)
        for index in 0..<30 {
            try disk.store(
                Data(repeating: 7, count: 1000), pixelSize: PixelSize(width: 1, height: 1),
                for: URL(string: "https://example.com/\(index).png")!)
        }
        disk.waitForPendingTrims()
        #expect(disk.totalByteCount <= unit * 10)
        #expect(disk.totalByteCount >= unit * 9)
    }

    @Test func theBudgetHoldsAfterEveryWriteNotOnlyOnceTrimsCatchUp() throws {
        let folder = TemporaryDirectory("disk")
        // Room for about ten of the files, whose sizes go from 1 to 5 kB: one or two blocks of 4 KiB.
        let budget = try CountedSize.ofStored(byteCount: 1000) * 10
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        for index in 0..<40 {
            try disk.store(
                Data(repeating: UInt8(index), count: 1000 + index * 100), pixelSize: PixelSize(width: 1, height: 1),
                for: URL(string: "https://example.com/\(index).png")!)
            #expect(disk.totalByteCount <= budget, "over budget after write \(index)")
        }
        #expect(disk.contains(URL(string: "https://example.com/39.png")!))
        #expect(!disk.contains(URL(string: "https://example.com/0.png")!))
    }

    @Test func bytesLargerThanTheWholeBudgetAreRefusedWithoutEmptyingTheTier() throws {
        let folder = TemporaryDirectory("disk")
        // Room for ten of the small files; the tier holds five.
        let budget = try CountedSize.ofStored(byteCount: 1000) * 10
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        let small = (0..<5).map { URL(string: "https://example.com/\($0).jpg")! }
        for url in small {
            try disk.store(Data(repeating: 1, count: 1000), pixelSize: PixelSize(width: 1, height: 1), for: url)
        }
        disk.waitForPendingTrims()
        // The URL's older, smaller copy goes too: it is not what the URL serves any more.
        let huge = small[0]
        #expect(throws: POSIXError(.EFBIG)) {
            try disk.store(Data(repeating: 2, count: budget * 2), pixelSize: PixelSize(width: 1, height: 1), for: huge)
        }
        disk.waitForPendingTrims()
        #expect(disk.data(for: huge) == nil)
        #expect(small.dropFirst().allSatisfy { disk.data(for: $0) == Data(repeating: 1, count: 1000) })
        #expect(disk.entries().count == 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).count == 4)  // no temporary left
    }

    /// The entries are the folder's regular files with the space each takes on disk and last-used dates; a link to a
    /// file outside, a subfolder, a FIFO and a temporary file are not entries, and a trim that
    /// empties the tier leaves them (and what the link points at) alone.
    @Test func entriesAreTheRegularFilesAndATrimTouchesNothingElse() throws {
        let folder = TemporaryDirectory("disk")
        let outside = TemporaryDirectory("outside")
        let target = outside.url.appendingPathComponent("keep.jpg")
        try Data(repeating: 7, count: 5000).write(to: target)
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let url = URL(string: "https://example.com/a.jpg")!
        try disk.store(Data(repeating: 1, count: 1234), pixelSize: PixelSize(width: 1, height: 1), for: url)
        try setLastUsed(of: disk.fileURL(for: url), secondsAgo: 3600)
        try Data(repeating: 2, count: 10).write(to: folder.url.appendingPathComponent(".hidden"))
        try FileManager.default.createSymbolicLink(
            at: folder.url.appendingPathComponent("link"), withDestinationURL: target)
        try FileManager.default.createDirectory(
            at: folder.url.appendingPathComponent("sub"), withIntermediateDirectories: false)
        #expect(mkfifo(folder.url.appendingPathComponent("fifo").path, 0o600) == 0)
        try Data([3]).write(to: folder.url.appendingPathComponent(".tmp-1-writing"))

        let entries = disk.entries().sorted { $0.name < $1.name }
        #expect(entries.map(\.name) == [".hidden", disk.fileURL(for: url).lastPathComponent])
        #expect(entries.map(\.byteCount) == entries.compactMap { CountedSize.ofFile(atPath: $0.path) })
        #expect(
            entries.map { $0.byteCount >= 10 } == [true, true] && entries.last.map { $0.byteCount >= 1234 } == true)
        let lastUsed = try #require(entries.last?.lastUsed)
        #expect(abs(lastUsed.timeIntervalSinceNow + 3600) < 60)

        disk.removeEntries(unusedFor: 0)
        #expect(disk.entries().isEmpty)
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
        #expect(left == [".tmp-1-writing", "fifo", "link", "sub"])
        #expect(try Data(contentsOf: target) == Data(repeating: 7, count: 5000))
    }

    @Test func evictExpiredRemovesOnlyFilesUnusedForLongerThanMaxAge() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let old = URL(string: "https://example.com/old.jpg")!
        let recent = URL(string: "https://example.com/recent.jpg")!
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: old)
        try disk.store(Data([2]), pixelSize: PixelSize(width: 1, height: 1), for: recent)
        try setLastUsed(of: disk.fileURL(for: old), secondsAgo: 8 * 24 * 3600)
        #expect(disk.removeEntries(unusedFor: 7 * 24 * 3600) == 1)
        #expect(!disk.contains(old))
        #expect(disk.contains(recent))
    }

    /// A file read, or replaced by another process sharing the folder, after the expiry listed the
    /// folder and before it removes what it listed as old, is in use: it stays.
    @Test(arguments: ["read", "replaced"])
    func evictExpiredKeepsAFileUsedWhileItRuns(use: String) throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let (used, old) = (URL(string: "https://example.com/used.jpg")!, URL(string: "https://example.com/old.jpg")!)
        for url in [used, old] {
            try disk.store(Data(repeating: 1, count: 100), pixelSize: PixelSize(width: 1, height: 1), for: url)
            try setLastUsed(of: disk.fileURL(for: url), secondsAgo: 8 * 24 * 3600)
        }
        disk.waitForPendingTrims()
        let removed = disk.removeEntries(unusedFor: 7 * 24 * 3600) {
            if use == "read" {
                #expect(disk.data(for: used) == Data(repeating: 1, count: 100))
            } else {
                // Another process's write: its own temporary file, renamed into place.
                let temporary = folder.url.appendingPathComponent(".tmp-other-writer")
                try? Data(repeating: 2, count: 100).write(to: temporary)
                #expect(rename(temporary.path, disk.fileURL(for: used).path) == 0)
            }
        }
        #expect(removed == 1)
        #expect(!disk.contains(old))
        #expect(disk.data(for: used) == Data(repeating: use == "read" ? 1 : 2, count: 100))
    }

    @Test func leftoverTemporaryFilesAreRemovedWhenTheStoreOpens() throws {
        let ended = try endedProcessID()
        // Named without a process id (older builds), by a process that has ended, and by an earlier
        // process that had this one's id (a container's main process is pid 1 on every launch) while no
        // store of this process writes it.
        for name in ["interrupted", "\(ended)-interrupted", "\(getpid())-interrupted"] {
            let folder = TemporaryDirectory("disk")
            let leftover = folder.url.appendingPathComponent(".tmp-\(name)")
            try Data([1, 2, 3]).write(to: leftover)
            // As an earlier process's file is: older than this process.
            try setLastUsed(of: leftover, secondsAgo: 10)
            DiskStore(directory: folder.url, byteLimit: 1 << 20).waitForPendingTrims()
            #expect(!FileManager.default.fileExists(atPath: leftover.path), "\(name)")
        }
    }

    /// A clock set back since an earlier process with this one's id (a container's pid 1) was interrupted
    /// in a write dates its leftover after the opening. The opening removed it whatever its date; trims
    /// keep a file with this process's id until it is a day old by the clock, which for one dated in
    /// the future is the clock's lag plus a day.
    @Test func aLeftoverWithThisProcessesIDDatedInTheFutureGoesWhenTheStoreOpens() throws {
        let folder = TemporaryDirectory("disk")
        let leftover = folder.url.appendingPathComponent(".tmp-\(getpid())-interrupted")
        try Data([1, 2, 3]).write(to: leftover)
        try setLastUsed(of: leftover, secondsAgo: -3600)
        DiskStore(directory: folder.url, byteLimit: 1 << 20).waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
    }

    /// Opening a store is often the first thing an app does on its main thread: it neither lists nor
    /// stats the folder there. Its sweep for leftovers waits for the disk queue, and looks at the temporary
    /// files only: it is not one of the listings that count every file.
    @Test func openingAStoreLeavesItsSweepForLeftoversToTheDiskQueue() async throws {
        let folder = TemporaryDirectory("disk")
        // No trim an interval after opening during the test: it lists the folder.
        let holder = DiskStore(directory: folder.url, byteLimit: 1 << 20, relistingInterval: 600)
        let gate = try await ImageStoreDiskCommitTests.holdDiskQueue(of: holder)
        let leftover = folder.url.appendingPathComponent(".tmp-interrupted")
        try Data([1, 2, 3]).write(to: leftover)
        let listings = holder.listingCount
        let opened = DiskStore(directory: folder.url, byteLimit: 1 << 20, relistingInterval: 600)
        // Before: removed by the opening itself, on this thread, with the disk queue held.
        #expect(FileManager.default.fileExists(atPath: leftover.path), "while the disk queue is held")
        gate.signal()
        opened.waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: leftover.path), "once the queue runs")
        #expect(opened.listingCount == listings)
    }

    /// A container sharing the folder has its own process ids: its writer's id may be one this process
    /// sees as ended, or its own. Its write holds the temporary file locked, and that keeps it, when a
    /// store opens and at trims; once the lock is gone the file is a leftover again.
    @Test(arguments: ["ended", "this"])
    func aTemporaryFileAWriteHoldsLockedIsNeverRemoved(writer: String) async throws {
        let id = writer == "ended" ? try endedProcessID() : getpid()
        let folder = TemporaryDirectory("disk")
        let writing = folder.url.appendingPathComponent(".tmp-\(id)-\(UUID().uuidString)")
        try Data(repeating: 4, count: 500).write(to: writing)
        // Another open file description: its lock is another writer's, even in this process.
        let descriptor = open(writing.path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        disk.waitForPendingTrims()
        #expect(FileManager.default.fileExists(atPath: writing.path), "when the store opens")
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        #expect(FileManager.default.fileExists(atPath: writing.path), "at a trim")
        close(descriptor)
        // A child process another test forks in the meantime holds a copy of the descriptor, and of
        // its lock, until it execs: wait for the lock to be free.
        try await waitUntil {
            let probe = open(writing.path, O_RDONLY | O_CLOEXEC)
            defer { close(probe) }
            return flock(probe, LOCK_EX | LOCK_NB) == 0
        }
        // Older than this process's stores, as an earlier process's leftover with this id is.
        try setLastUsed(of: writing, secondsAgo: 10)
        DiskStore(directory: folder.url, byteLimit: 1 << 20).waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: writing.path), "unlocked, when a store opens")
    }

    /// The store's own writes hold their temporary file locked until it is renamed into place.
    @Test func aWriteHoldsItsTemporaryFileLockedUntilItIsInPlace() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        var lockedDuringWrite: Bool?
        try disk.store(
            Data(repeating: 7, count: 1000), pixelSize: PixelSize(width: 1, height: 1), for: url,
            isCurrent: {
                // Runs on the commit queue just before the rename: the temporary file is complete.
                let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.url.path)) ?? []
                guard let name = names.first(where: { $0.hasPrefix(".tmp-") }) else { return true }
                let descriptor = open(folder.url.appendingPathComponent(name).path, O_RDONLY | O_CLOEXEC)
                defer { close(descriptor) }
                lockedDuringWrite = flock(descriptor, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK
                return true
            })
        #expect(lockedDuringWrite == true)
        #expect(disk.data(for: url) == Data(repeating: 7, count: 1000))
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
        #expect(left.filter { $0.hasPrefix(".tmp-") } == [])
    }

    /// Another process sharing the folder may end in the middle of a write while this one runs for
    /// weeks: its leftover goes with the next trim, not only when a store opens.
    @Test func aLeftoverTemporaryFileOfAnotherProcessGoesWithTheNextTrim() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        let leftover = folder.url.appendingPathComponent(".tmp-\(try endedProcessID())-interrupted")
        try Data(repeating: 3, count: 500).write(to: leftover)
        try disk.store(Data([2]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(disk.data(for: url) == Data([2]))
    }

    /// A process id is given out again: a temporary file a day old whose id belongs to a live process
    /// now is a leftover (no write takes a day), while a recent one is that process's write in progress
    /// and stays. Both when a store opens and at the next trim.
    @Test func aDayOldTemporaryFileIsALeftoverEvenWhenItsProcessIDIsInUseAgain() throws {
        let live = getppid()  // the test runner's parent: alive, and not this process
        let folder = TemporaryDirectory("disk")
        let old = folder.url.appendingPathComponent(".tmp-\(live)-interrupted")
        let writing = folder.url.appendingPathComponent(".tmp-\(live)-writing")
        func makeTemporaries() throws {
            try Data(repeating: 3, count: 500).write(to: old)
            try setLastUsed(of: old, secondsAgo: 2 * 24 * 3600)
            try Data(repeating: 4, count: 500).write(to: writing)
        }
        try makeTemporaries()
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        disk.waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: old.path), "when the store opens")
        #expect(FileManager.default.fileExists(atPath: writing.path))
        try makeTemporaries()
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: old.path), "at the next trim")
        #expect(FileManager.default.fileExists(atPath: writing.path))
    }

    /// Containers that share a folder each run their main process as pid 1. A temporary file named
    /// with this process's id that appeared after the store opened, and that none of its stores is
    /// writing, is another such process's write in progress: trims keep it while it is recent, as they
    /// keep any live writer's, and remove it a day old.
    @Test func aRecentTemporaryFileOfAnotherProcessWithThisProcessesIDStaysAtTrims() throws {
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let writing = folder.url.appendingPathComponent(".tmp-\(getpid())-\(UUID().uuidString)")
        try Data(repeating: 4, count: 500).write(to: writing)
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        // Before: removed by the trim after the write, so the other process's rename failed.
        #expect(FileManager.default.fileExists(atPath: writing.path))
        try setLastUsed(of: writing, secondsAgo: 2 * 24 * 3600)
        try disk.store(Data([2]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: writing.path))
    }

    /// A writer in another PID namespace (a container sharing the folder) holds no lock between making
    /// its temporary file and locking it, and its id says nothing here: a store opening then, or a
    /// trim, keeps the file while it is recent, and removes it once older than the grace period.
    @Test func anUnlockedTemporaryFileOfAnotherPIDNamespaceStaysWhileRecent() throws {
        let namespace = try #require(DiskStore.pidNamespace, "this system names no PID namespace")
        let ended = try endedProcessID()  // an id with no process here, as another namespace's look
        let folder = TemporaryDirectory("disk")
        let writing = folder.url.appendingPathComponent(".tmp-\(ended)-n\(namespace &+ 1)-\(UUID().uuidString)")
        try Data(repeating: 4, count: 500).write(to: writing)
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        disk.waitForPendingTrims()
        // Before: removed as the store opened, as an ended process's leftover.
        #expect(FileManager.default.fileExists(atPath: writing.path), "when the store opens")
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        #expect(FileManager.default.fileExists(atPath: writing.path), "at the next trim")
        try setLastUsed(of: writing, secondsAgo: 2 * DiskStore.unlockedGracePeriod)
        try disk.store(Data([2]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: writing.path), "past the grace period")
    }

    /// This process's writes name its PID namespace, so a store in the same namespace still removes an
    /// ended writer's leftover at once, however recent.
    @Test func aRecentLeftoverOfAnEndedWriterInThisNamespaceGoesAtOnce() throws {
        let namespace = try #require(DiskStore.pidNamespace, "this system names no PID namespace")
        let folder = TemporaryDirectory("disk")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        let leftover = folder.url.appendingPathComponent(
            ".tmp-\(try endedProcessID())-n\(namespace)-\(UUID().uuidString)")
        try Data(repeating: 3, count: 500).write(to: leftover)
        DiskStore(directory: folder.url, byteLimit: 1 << 20).waitForPendingTrims()
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(disk.data(for: url) == Data([1]))
    }

    /// What a write names its temporary file: its id, then its namespace.
    @Test func aWritesTemporaryFileNamesItsProcessAndNamespace() throws {
        let namespace = try #require(DiskStore.pidNamespace, "this system names no PID namespace")
        let folder = TemporaryDirectory("disk")
        let attributes = PathRecordingAttributes()
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20, attributes: attributes)
        try disk.store(Data([1]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        let name = try #require(attributes.paths.first.map { URL(fileURLWithPath: $0).lastPathComponent })
        #expect(name.hasPrefix(".tmp-\(getpid())-n\(namespace)-"), "\(name)")
    }

    @Test func theFirstWriteMakesTheFolderAndTheNextMakesItAgainAfterItWasDeleted() throws {
        let folder = TemporaryDirectory("disk")
        let directory = folder.url.appendingPathComponent("store")
        let disk = DiskStore(directory: directory, byteLimit: 1 << 20)
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(disk.data(for: url) == nil)
        try disk.store(Data([8]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        #expect(disk.data(for: url) == Data([8]))
        try FileManager.default.removeItem(at: directory)
        try disk.store(Data([9]), pixelSize: PixelSize(width: 1, height: 1), for: url)
        #expect(disk.data(for: url) == Data([9]))
    }

    /// The id of a process that has ended.
    private func endedProcessID() throws -> pid_t {
        let ended = try ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "exit 0"], environment: ProcessInfo.processInfo.environment,
            directory: "/", standardOutput: "/dev/null", standardError: "/dev/null")
        _ = ended.waitForExit()
        return ended.pid
    }

    /// Three files of 1000 bytes stored through `writer`, last used 100, 90 and 80 seconds ago: their URLs.
    private func storeThreeAgedFiles(in writer: DiskStore) throws -> [URL] {
        let urls = (0..<3).map { URL(string: "https://example.com/\($0).jpg")! }
        for (offset, url) in urls.enumerated() {
            try writer.store(
                Data(repeating: UInt8(offset), count: 1000), pixelSize: PixelSize(width: 1, height: 1), for: url)
            try setLastUsed(of: writer.fileURL(for: url), secondsAgo: Double(100 - offset * 10))
        }
        return urls
    }

    private func setLastUsed(of file: URL, secondsAgo: TimeInterval) throws {
        try setDate(of: file, to: Date().addingTimeInterval(-secondsAgo))
    }

    private func setDate(of file: URL, to date: Date) throws {
        try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: file.path)
    }

    /// Reads are not queued behind a trim: a file read after the trim listed the folder is no longer
    /// among the coldest, and the next one goes instead. Before, the trim went by the dates it listed
    /// and removed the file just read, keeping a colder one.
    @Test func aTrimKeepsAFileReadSinceItsListing() throws {
        let folder = TemporaryDirectory("disk-trim-read")
        // Room for two of the files.
        let disk = DiskStore(directory: folder.url, byteLimit: try CountedSize.ofStored(byteCount: 1000) * 2)
        let size = PixelSize(width: 2, height: 2)
        func url(_ index: Int) -> URL { URL(string: "https://images.example.com/\(index).jpg")! }
        for index in 0..<2 { try disk.store(Data(repeating: 1, count: 1000), pixelSize: size, for: url(index)) }
        disk.waitForPendingTrims()
        // Another process adds a third file: one must go.
        try Data(repeating: 2, count: 1000).write(to: URL(fileURLWithPath: disk.filePath(for: url(2))))
        for (index, age) in [(0, 300.0), (1, 200.0), (2, 100.0)] {
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: disk.filePath(for: url(index)))
        }
        disk.trim {
            #expect(disk.data(for: url(0)) != nil)  // the coldest file, read once the folder is listed
        }
        #expect(disk.contains(url(0)), "the file read just now was trimmed")
        #expect(!disk.contains(url(1)) && disk.contains(url(2)))
    }

    /// Reads spare a file from a trim only while others can go: when every file was read since the
    /// listing, the coldest still go until the folder is within the budget.
    @Test func aTrimKeepsTheBudgetWhenEveryFileWasReadSinceItsListing() throws {
        let folder = TemporaryDirectory("disk-trim-all-read")
        // Room for two of the files.
        let budget = try CountedSize.ofWritten(byteCount: 1000) * 2
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        func url(_ index: Int) -> URL { URL(string: "https://images.example.com/\(index).jpg")! }
        for index in 0..<4 {
            // As another process writes them: four files, twice the budget.
            let path = disk.filePath(for: url(index))
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            try Data(repeating: UInt8(index), count: 1000).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-Double(400 - index * 100))], ofItemAtPath: path)
        }
        disk.trim {
            for index in 0..<4 { #expect(disk.data(for: url(index)) != nil) }
        }
        #expect(disk.totalByteCount <= budget)
        #expect(disk.countedByteCount == disk.totalByteCount)
        // The two coldest as listed went.
        #expect(!disk.contains(url(0)) && !disk.contains(url(1)))
        #expect(disk.contains(url(2)) && disk.contains(url(3)))
    }
}

/// A file system without extended attributes: every write is refused, nothing is ever there.
/// Attributes as ext4 stores them: a value past 4000 bytes does not fit (`ENOSPC`).
struct SmallAttributes: FileAttributesHook {
    static let largestValue = 4000

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        guard value.count <= Self.largestValue else { throw POSIXError(.ENOSPC) }
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
    }

    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        guard value.count <= Self.largestValue else { throw POSIXError(.ENOSPC) }
        try FileExtendedAttributes().setValue(value, named: name, onDescriptor: descriptor)
    }
}

struct RefusingAttributes: ExtendedAttributeStoring {
    func read(named name: String, atPath path: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) -> Int?
    {
        nil
    }
    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        throw POSIXError(.EOPNOTSUPP)
    }
    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        throw POSIXError(.EOPNOTSUPP)
    }
    func removeValue(named name: String, atPath path: String) {}
}

/// File attributes that also note every path an attribute is set at.
private final class PathRecordingAttributes: FileAttributesHook, @unchecked Sendable {
    // Only touched while holding `lock`.
    private let lock = NSLock()
    private var recorded: [String] = []
    private let real = FileExtendedAttributes()

    var paths: [String] { lock.withLock { recorded } }

    func read(named name: String, atPath path: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) -> Int?
    {
        real.read(named: name, atPath: path, into: buffer)
    }

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        lock.withLock { recorded.append(path) }
        try real.setValue(value, named: name, atPath: path)
    }

    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        try real.setValue(value, named: name, onDescriptor: descriptor)
    }

    func removeValue(named name: String, atPath path: String) {
        real.removeValue(named: name, atPath: path)
    }
}
