import Foundation
import Testing

@testable import AsyncImageCache

/// The background trim that follows a write lists the folder to catch what other processes wrote;
/// it waits until ``DiskStore/relistingInterval`` has passed since the folder was last listed, so a
/// stream of writes does not list a large folder once per write. The budget still holds at every
/// write: commits keep their own count.
@Suite(.timeLimit(.minutes(3))) struct DiskStoreRelistingTests {
    let folder = TemporaryDirectory("disk-relisting")

    private func url(_ index: Int) -> URL {
        URL(string: "https://images.example.com/\(index).jpg")!
    }

    private func bytes(_ count: Int, _ seed: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &+ seed) })
    }

    private let size = PixelSize(width: 4, height: 4)

    /// What a file of `bytes(1000, _)` counts against the budget on this file system, measured: the
    /// budgets here are numbers of such files.
    private func unit() throws -> Int { try CountedSize.ofStored(bytes(1000, 0)) }

    @Test func aStreamOfWritesListsTheFolderOnceAnInterval() throws {
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20, relistingInterval: 60)
        let opened = disk.listingCount
        for index in 0..<50 {
            try disk.store(bytes(1000, index), pixelSize: size, for: url(index))
            // Each write's background trim had time to start.
            Thread.sleep(forTimeInterval: 0.002)
        }
        // The first commit counts the folder once; no background trim has run in the minute since.
        #expect(disk.listingCount - opened == 1)
        let counted = (0..<50).compactMap { CountedSize.ofFile(atPath: disk.filePath(for: url($0))) }
        #expect(counted.count == 50)
        #expect(disk.countedByteCount == counted.reduce(0, +))
        #expect(disk.totalByteCount == counted.reduce(0, +))
    }

    @Test func theBudgetHoldsAtEveryWriteBetweenListings() throws {
        let budget = try unit() * 10
        let disk = DiskStore(directory: folder.url, byteLimit: budget, relistingInterval: 60)
        for index in 0..<40 {
            try disk.store(bytes(1000, index), pixelSize: size, for: url(index))
            #expect(disk.totalByteCount <= budget, "after write \(index)")
        }
        // The ten written last are the ten kept.
        #expect(disk.entries().count == 10)
        #expect((30..<40).allSatisfy { disk.contains(url($0)) })
    }

    /// A store opened with a lower budget than its folder holds (a new version of the app, or another
    /// process's writes) brings the folder within it one interval after it opened, though it never
    /// writes: the trims that follow writes were the only ones.
    @Test func aStoreThatOnlyReadsTrimsItsFolderToItsBudgetAnIntervalAfterItOpens() async throws {
        let writer = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        for index in 0..<10 {
            try writer.store(bytes(1000, index), pixelSize: size, for: url(index))
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: Double(index - 10) * 60)],
                ofItemAtPath: writer.filePath(for: url(index)))
        }
        writer.waitForPendingTrims()
        let budget = try unit() * 3
        let reader = DiskStore(directory: folder.url, byteLimit: budget, relistingInterval: 0.5)
        try await waitUntil { reader.totalByteCount <= budget }
        // The coldest went; the newest stayed.
        #expect((7..<10).allSatisfy { reader.contains(url($0)) })
        #expect(reader.entries().count == 3)
        #expect(reader.countedByteCount == reader.totalByteCount)
    }

    /// What another process wrote into the folder counts once the trim after a write lists it: at
    /// once when waited for, and on its own once the interval has passed.
    @Test func filesAnotherProcessWroteAreTrimmedByTheNextListing() throws {
        for waits in [true, false] {
            let folder = TemporaryDirectory("disk-relisting-shared")
            let budget = try unit() * 10
            // An hour: a wait that let the trim wait its time would run into the suite's time limit.
            let disk = DiskStore(directory: folder.url, byteLimit: budget, relistingInterval: waits ? 3600 : 0.3)
            try disk.store(bytes(1000, 0), pixelSize: size, for: url(0))
            // Another process's files: 12 of 1000 bytes this store's count does not know, last used an hour
            // ago (the clock that dates files ticks coarsely: written now, they might tie with the next).
            for index in 1...12 {
                let file = disk.fileURL(for: url(index))
                try bytes(1000, index).write(to: file)
                try FileManager.default.setAttributes(
                    [.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: file.path)
            }
            try disk.store(bytes(1000, 99), pixelSize: size, for: url(99))
            let start = Date()
            if waits {
                disk.waitForPendingTrims()
            } else {
                while disk.totalByteCount > budget, Date().timeIntervalSince(start) < 20 {
                    Thread.sleep(forTimeInterval: 0.05)
                }
                // The folder is within the budget once the trim that ran on its own has removed its files; it
                // records the count after, on the disk queue (in between, the count has the removals taken off
                // and not yet the listing's files added). Waited for here; no trim is left waiting to run.
                disk.waitForPendingTrims()
            }
            #expect(disk.totalByteCount <= budget, waits ? "waited" : "not waited")
            #expect(disk.countedByteCount == disk.totalByteCount)
            #expect(disk.contains(url(0)) && disk.contains(url(99)))
        }
    }

    /// A store released with a trim still waiting for its time drops it, rather than living on
    /// until then.
    @Test func aWaitingTrimDoesNotKeepItsStoreAlive() throws {
        weak var released: DiskStore?
        do {
            let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20, relistingInterval: 60)
            try disk.store(bytes(1000, 0), pixelSize: size, for: url(0))
            released = disk
        }
        #expect(released == nil)
    }

    /// A full tier, a cache's steady state, makes room at every commit: from the last trim's listing, kept
    /// up since, not by listing the folder again (it listed 30 times for 30 writes).
    @Test func aStreamOfWritesIntoAFullTierListsTheFolderOnceAnInterval() throws {
        let budget = try unit() * 10
        let disk = DiskStore(directory: folder.url, byteLimit: budget, relistingInterval: 60)
        for index in 0..<10 { try disk.store(bytes(1000, index), pixelSize: size, for: url(index)) }
        let full = disk.listingCount
        for index in 10..<40 {
            try disk.store(bytes(1000, index), pixelSize: size, for: url(index))
            #expect(disk.totalByteCount <= budget)
        }
        let listings = disk.listingCount - full - 30  // totalByteCount lists once per write above
        #expect(listings <= 1, "30 writes into a full tier listed the folder \(listings) times")
    }

    /// Files that another process (or a user clearing the cache) removed since the last listing leave their
    /// room free for the next writes: the count still holds them, and room made from it took each new file
    /// away at the next write, until the next listing. The commit that finds the listing's files gone lists
    /// the folder again instead, once.
    @Test func filesAnotherProcessRemovedSinceTheListingLeaveRoomForTheNextWrites() throws {
        let budget = try unit() * 10
        let disk = DiskStore(directory: folder.url, byteLimit: budget, relistingInterval: 60)
        for index in 0..<10 { try disk.store(bytes(1000, index), pixelSize: size, for: url(index)) }
        disk.waitForPendingTrims()  // the listing a full tier makes room from
        // `aic cache clear` in another process.
        for index in 0..<10 { try FileManager.default.removeItem(at: disk.fileURL(for: url(index))) }
        let cleared = disk.listingCount
        for index in 10..<15 { try disk.store(bytes(1000, index), pixelSize: size, for: url(index)) }
        let listings = disk.listingCount - cleared
        // Five files in room for ten: every one stays.
        #expect((10..<15).filter { disk.contains(url($0)) } == Array(10..<15))
        #expect(disk.countedByteCount == disk.totalByteCount)
        #expect(listings == 1)
    }

    /// Between listings, a commit that makes room takes files in the order they were last used, read or
    /// written: a file read since the listing goes before one written after that read. Files read since the
    /// listing all stayed until every file not read was gone, the one written a moment before among them.
    @Test func betweenListingsAFileReadBeforeAnotherWasWrittenGoesBeforeIt() throws {
        let budget = try unit() * 3
        let disk = DiskStore(directory: folder.url, byteLimit: budget, relistingInterval: 60)
        for index in 0..<3 { try disk.store(bytes(1000, index), pixelSize: size, for: url(index)) }
        disk.waitForPendingTrims()  // the listing the next commits make room from
        // Uses spaced out: the clock that dates files ticks coarsely.
        func use(_ index: Int) {
            Thread.sleep(forTimeInterval: 0.02)
            _ = disk.data(for: url(index))
        }
        for index in 0..<3 { use(index) }
        Thread.sleep(forTimeInterval: 0.02)
        try disk.store(bytes(1000, 3), pixelSize: size, for: url(3))  // 0 goes, read first
        use(1)
        try disk.store(bytes(1000, 4), pixelSize: size, for: url(4))  // 2 goes, read before 3 was written
        #expect((0..<5).filter { disk.contains(url($0)) } == [1, 3, 4])
        #expect(disk.listingCount == 1 + 1)  // the first commit's count and the wait's trim only
    }

    /// After `waitForPendingTrims()` ran a trim early, the timer it pre-empted fires at its old time and
    /// must not run the next write's trim then, within the interval. Read on the disk queue by a block due
    /// between the two timers' times: dispatch runs due timers in the order of their times, so the old
    /// timer has run there and the next write's has not, however late the machine runs each.
    @Test func aTrimRunEarlyLeavesNoTimerThatListsTooSoon() throws {
        let interval: TimeInterval = 2
        var checked = 0
        for attempt in 1...5 where checked == 0 {
            let folder = TemporaryDirectory("disk-relisting-early")
            let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20, relistingInterval: interval)
            try disk.store(bytes(1000, 0), pixelSize: size, for: url(0))  // counts the folder; its trim due 2 s later
            let counted = try #require(disk.folder.lastListed.withLock { $0 })
            let oldTimer = counted + interval
            Thread.sleep(forTimeInterval: 0.25 * interval)
            disk.waitForPendingTrims()  // lists now, 0.5 s after the count
            let waited = disk.listingCount
            let listed = try #require(disk.folder.lastListed.withLock { $0 })
            // Listed before the old timer's time, the wait ran its trim and the timer is still to fire. Listed
            // later (the test thread held back past it), the timer may have run the trim itself: the attempt
            // would prove nothing, and runs again in a new folder.
            guard listed < oldTimer else { continue }
            try disk.store(bytes(1000, 1), pixelSize: size, for: url(1))  // its trim due at `listed` + 2 s
            // Halfway between the old timer's time and the next write's trim's: about 2.25 s after the count.
            let nextTimer = listed + interval
            let between = DispatchTime(
                uptimeNanoseconds: oldTimer.uptimeNanoseconds / 2 + nextTimer.uptimeNanoseconds / 2)
            let seen = LockedBox<Int?>(nil)
            let done = DispatchSemaphore(value: 0)
            disk.trimQueue.asyncAfter(deadline: between) {
                seen.withLock { $0 = disk.listingCount }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 60) == .success, "attempt \(attempt)")
            let listings = try #require(seen.withLock { $0 }) - waited
            #expect(listings == 0, "listed again \(listings) times within the interval (attempt \(attempt))")
            checked += 1
        }
        #expect(checked == 1, "the wait never ran the trim before its timer's time")
    }
}
