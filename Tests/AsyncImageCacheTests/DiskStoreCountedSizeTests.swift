import Foundation
import Testing

@testable import AsyncImageCache

/// The budget counts what a file takes on disk (``DiskStore/countedSize(of:)``), its attributes included.
@Suite struct DiskStoreCountedSizeTests {
    /// Caching facts written onto a stored file (a `304` revalidation) can make it take more on disk (ext4
    /// keeps attributes that do not fit in the inode in a block of their own): the count grows with it.
    @Test func cachingFactsWrittenOntoAStoredFileCount() throws {
        let folder = TemporaryDirectory("disk-counted-size")
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20, attributes: GrowingAttributes())
        try disk.store(Data(repeating: 1, count: 1000), pixelSize: PixelSize(width: 1, height: 1), for: url)
        disk.waitForPendingTrims()
        let before = try #require(CountedSize.ofFile(atPath: disk.filePath(for: url)))
        #expect(disk.countedByteCount == before)
        disk.setCacheMetadata(.longForTests, for: url)
        let after = try #require(CountedSize.ofFile(atPath: disk.filePath(for: url)))
        #expect(after > before, "the attributes took no more space: this test shows nothing here")
        #expect(disk.countedByteCount == after, "\(before) bytes before, \(after) after")
        #expect(disk.entries().map(\.byteCount) == [after])
    }

    /// A file that caching facts made take more space can take the folder over the budget: the trim
    /// that follows, as one follows a write, brings it back within it, the coldest file first.
    @Test func aFileThatCachingFactsGrowLeadsToATrim() throws {
        let folder = TemporaryDirectory("disk-counted-size")
        let size = PixelSize(width: 1, height: 1)
        func url(_ index: Int) -> URL { URL(string: "https://images.example.com/\(index).jpg")! }
        let unit = try CountedSize.ofStored(byteCount: 1000)
        let disk = DiskStore(directory: folder.url, byteLimit: 3 * unit, attributes: GrowingAttributes())
        for index in 0..<3 { try disk.store(Data(repeating: 1, count: 1000), pixelSize: size, for: url(index)) }
        disk.waitForPendingTrims()
        for (index, secondsAgo) in [(0, 3600.0), (1, 1800.0)] {
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-secondsAgo)],
                ofItemAtPath: disk.filePath(for: url(index)))
        }
        disk.setCacheMetadata(.longForTests, for: url(2))
        try #require(disk.totalByteCount > 3 * unit, "the attributes took no more space: this test shows nothing here")
        // One block more with the attributes of this test (two on ext4, which adds one of its own).
        let grown = try #require(CountedSize.ofFile(atPath: disk.filePath(for: url(2))))
        disk.waitForPendingTrims()
        #expect(disk.totalByteCount <= 3 * unit)
        #expect(!disk.contains(url(0)) && disk.contains(url(2)))
        #expect(disk.contains(url(1)) == (grown + unit <= 3 * unit), "the second coldest goes only when needed")
        #expect(disk.countedByteCount == disk.totalByteCount)
    }

    /// A commit counts its file as it stays once written, not as the file system had it while it was being
    /// written: XFS holds space past the end of a growing file until it is closed (an 8 MB file took
    /// 16 MB), and a count of it made commits remove files the budget did not need.
    @Test func aLargeFileCountsWhatItTakesOnceWritten() throws {
        let folder = TemporaryDirectory("disk-counted-size")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 30, relistingInterval: 600)
        var total = 0
        for (index, byteCount) in [200_000, 1_000_000, 8_000_000].enumerated() {
            let url = URL(string: "https://images.example.com/\(index).jpg")!
            try disk.store(Data(repeating: 1, count: byteCount), pixelSize: PixelSize(width: 1, height: 1), for: url)
            total += try #require(CountedSize.ofFile(atPath: disk.filePath(for: url)))
            #expect(disk.countedByteCount == total, "after \(byteCount) bytes")
        }
    }

    /// A commit truncates its file to its own size (giving back what XFS holds past the end of a growing
    /// file) only where the file holds such space: on XFS the truncation writes the file's bytes out to the
    /// device and waits for them, which every commit did, 1 MB files included (33,554,432 bytes written
    /// out for 32 of them, measured by hand on XFS; none without). Real files, on any file system.
    @Test func onlyAFileThatHoldsSpacePastItsEndIsTruncated() throws {
        let folder = TemporaryDirectory("disk-counted-size")
        func status(of name: String, byteCount: Int, extra: Int) throws -> stat {
            let path = folder.url.appendingPathComponent(name).path
            let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let written = Data(repeating: 1, count: byteCount).withUnsafeBytes {
                write(descriptor, $0.baseAddress, $0.count)
            }
            try #require(written == byteCount)
            if extra > 0 {
                try #require(
                    GrowingAttributes.fallocate(descriptor, GrowingAttributes.keepSize, off_t(byteCount), off_t(extra))
                        == 0)
            }
            var info = stat()
            try #require(fstat(descriptor, &info) == 0)
            return info
        }
        for byteCount in [1, 1000, 1 << 20, 3_000_000] {
            #expect(
                !DiskStore.holdsSpacePastItsEnd(try status(of: "plain-\(byteCount)", byteCount: byteCount, extra: 0)))
            #expect(
                DiskStore.holdsSpacePastItsEnd(
                    try status(of: "grown-\(byteCount)", byteCount: byteCount, extra: 1 << 20)))
        }
    }

    /// Bytes within the budget can take a block more than it on disk: such a file is refused as one larger
    /// than the budget is, not made room for by emptying the tier and then kept over the budget anyway.
    @Test func bytesUnderTheBudgetThatTakeMoreSpaceThanItAreRefusedWithoutEmptyingTheTier() throws {
        let folder = TemporaryDirectory("disk-space")
        let size = PixelSize(width: 1, height: 1)
        let (kept, replaced) = (
            URL(string: "https://example.com/kept.jpg")!, URL(string: "https://example.com/big.jpg")!
        )
        let unit = try CountedSize.ofStored(byteCount: 1000)
        let budget = 2 * unit + unit / 2  // room for two small files
        let bytes = budget - 10
        try #require(
            try CountedSize.ofStored(byteCount: bytes) > budget, "this file system rounds \(bytes) bytes to no block")
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        try disk.store(Data(repeating: 1, count: 1000), pixelSize: size, for: kept)
        try disk.store(Data(repeating: 2, count: 10), pixelSize: size, for: replaced)
        #expect(throws: POSIXError(.EFBIG)) {
            try disk.store(Data(repeating: 3, count: bytes), pixelSize: size, for: replaced)
        }
        #expect(disk.data(for: kept) == Data(repeating: 1, count: 1000))
        #expect(disk.data(for: replaced) == nil, "the older copy of the refused bytes stays")
        disk.waitForPendingTrims()
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
        #expect(names.filter { $0.hasPrefix(".tmp-") } == [], "a temporary file left")
        #expect(disk.totalByteCount <= budget)
        #expect(disk.countedByteCount == disk.totalByteCount)
    }
}
