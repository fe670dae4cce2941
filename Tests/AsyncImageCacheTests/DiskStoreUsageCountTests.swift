import Foundation
import Testing

@testable import AsyncImageCache

/// The byte count a disk tier keeps of its folder, so that a write need not list the folder to know
/// whether it fits: a removal takes the file's bytes off it instead of dropping the count, and the
/// count stays what the folder holds.
@Suite struct DiskStoreUsageCountTests {
    let folder = TemporaryDirectory("disk-usage-count")
    let size = PixelSize(width: 2, height: 2)

    private func url(_ i: Int) -> URL { URL(string: "https://images.example.com/\(i).jpg")! }
    private func bytes(_ count: Int) -> Data { Data(repeating: UInt8(truncatingIfNeeded: count), count: count) }

    /// What the file of `url` counts against the budget, measured.
    private func counted(_ disk: DiskStore, _ url: URL) throws -> Int {
        try #require(CountedSize.ofFile(atPath: disk.filePath(for: url)))
    }

    /// Files of 5, 10 and 15 kB: a space on disk of their own each, on a file system of blocks up to 4 KiB.
    @Test func aRemovalTakesItsBytesOffTheCountAndTheNextWriteListsNothing() throws {
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        for i in 1...3 { try disk.store(bytes(i * 5000), pixelSize: size, for: url(i)) }
        let (one, two, three) = (try counted(disk, url(1)), try counted(disk, url(2)), try counted(disk, url(3)))
        // Every write queues a trim that lists the folder in the background; those are let finish.
        disk.waitForPendingTrims()
        let listed = disk.listingCount
        #expect(disk.countedByteCount == one + two + three)

        disk.remove(url(2))
        disk.remove(url(2))  // gone already: nothing more comes off
        disk.remove(url(9))  // never stored
        #expect(disk.countedByteCount == one + three)
        try disk.store(bytes(500), pixelSize: size, for: url(4))
        let four = try counted(disk, url(4))
        disk.waitForPendingTrims()
        #expect(disk.listingCount == listed + 1)  // the write's background trim only
        #expect(disk.countedByteCount == one + three + four)
        #expect(disk.totalByteCount == one + three + four)
    }

    @Test func expiryTakesWhatItRemovesOffTheCount() throws {
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        for i in 1...4 { try disk.store(bytes(i * 5000), pixelSize: size, for: url(i)) }
        let (two, four) = (try counted(disk, url(2)), try counted(disk, url(4)))
        let lastWeek = Date().addingTimeInterval(-7 * 86_400)
        for i in [1, 3] {
            try FileManager.default.setAttributes(
                [.modificationDate: lastWeek], ofItemAtPath: disk.filePath(for: url(i)))
        }
        disk.waitForPendingTrims()
        #expect(disk.removeEntries(unusedFor: 86_400) == 2)
        #expect(disk.countedByteCount == two + four)
        let listed = disk.listingCount
        try disk.store(bytes(50), pixelSize: size, for: url(5))
        let five = try counted(disk, url(5))
        disk.waitForPendingTrims()
        #expect(disk.listingCount == listed + 1)  // the write's background trim only
        #expect(disk.countedByteCount == two + four + five)
        #expect(disk.totalByteCount == two + four + five)
    }

    /// Removals of a URL side by side with writes of it: whichever order they land in, the count
    /// ends as what the folder holds. (A background trim that runs after the last of them counts the
    /// folder again and would hide a wrong count; one that ran before leaves it to be seen.) The writes
    /// are of 100 bytes to 18 kB, spaces on disk of different numbers of blocks.
    @Test func removalsRacingWritesOfTheSameURLsKeepTheCountTrue() async throws {
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 30)
        try disk.store(bytes(10), pixelSize: size, for: url(0))
        #expect(disk.countedByteCount == (try counted(disk, url(0))))
        // On threads of their own: blocking disk calls on Swift's cooperative pool (two threads here)
        // held it for the whole race, over a minute under ThreadSanitizer, and other tests' loads
        // stood still past their time limits.
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    await onOwnThread {
                        for step in 0..<200 {
                            let target = url((worker + step) % 3)
                            if (worker + step) % 2 == 0 {
                                try? disk.store(bytes(100 + (step % 7) * 3000), pixelSize: size, for: target)
                            } else {
                                disk.remove(target)
                            }
                        }
                    }
                }
            }
        }
        #expect(disk.countedByteCount == disk.totalByteCount)
    }

    /// A removal while a background trim lists the folder: the trim's total included the file when
    /// its listing read it before the removal, and the count stayed that much too high until the next
    /// trim (in 14 of 40 rounds here). Each round removes a file of its own as soon as a trim's listing
    /// has begun, then lets the trim finish.
    @Test func aRemovalWhileATrimListsTheFolderComesOffTheCount() async throws {
        let disk = try filledStore()
        #expect(disk.countedByteCount == disk.totalByteCount)
        let drifts = await countDrifts(of: disk) { round in disk.remove(url(round * 37 % Self.fileCount)) }
        #expect(drifts.isEmpty, "the count and the folder differed by \(drifts) bytes")
    }

    /// A name removed after a trim's listing read it, and written again before the count is recorded
    /// (by another process sharing the folder; here a rename stands in for it): the count holds the new
    /// file, as the folder does. Taking the removed name off by its name alone, the count fell short by
    /// the new file. The removal and the rename run from the trim itself, between its listing and its
    /// count, so no round depends on how the threads are scheduled.
    @Test func aNameRemovedAndWrittenAgainWhileATrimCountsTheFolderCountsWhatIsThereNow() throws {
        let disk = try filledStore()
        let staged = folder.url.deletingLastPathComponent().appendingPathComponent("staged-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: staged) }
        for (round, index) in [0, 700, Self.fileCount - 1].enumerated() {
            let target = url(index)
            try bytes(5000 + round).write(to: staged)
            disk.trim {
                disk.remove(target)
                #expect(rename(staged.path, disk.filePath(for: target)) == 0)
            }
            #expect(disk.countedByteCount == disk.totalByteCount, "round \(round)")
            #expect(FileManager.default.contents(atPath: disk.filePath(for: target))?.count == 5000 + round)
        }
    }

    /// Files enough for a listing of a few milliseconds.
    static let fileCount = 1500

    /// A store on a folder of ``fileCount`` files of sizes of their own (on disk, a block each on most file
    /// systems), counted once.
    /// Its background trims run as soon as they are scheduled, however recently the folder was listed.
    private func filledStore() throws -> DiskStore {
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 30, relistingInterval: 0)
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        for i in 0..<Self.fileCount {
            let file = URL(fileURLWithPath: disk.filePath(for: url(i)))
            try bytes(100 + i).write(to: file)
        }
        disk.trim()
        return disk
    }

    /// Runs 40 rounds on a thread of their own: each starts a background trim, runs
    /// `whileListing` (with the round's number) as soon as the trim's listing has begun, and lets the
    /// trim finish; returns how far the count was from the folder after each round that differed.
    private func countDrifts(
        of disk: DiskStore, _ whileListing: @escaping @Sendable (Int) -> Void
    ) async -> [Int] {
        await onOwnThread {
            var drifts: [Int] = []
            for round in 0..<40 {
                let listed = disk.listingCount
                disk.scheduleTrim()
                while disk.listingCount == listed {}  // the trim has begun listing
                whileListing(round)
                disk.waitForPendingTrims()
                let drift = (disk.countedByteCount ?? 0) - disk.totalByteCount
                if drift != 0 { drifts.append(drift) }
            }
            return drifts
        }
    }
}
