import Foundation
import Testing

@testable import AsyncImageCache

/// An attribute written onto a stored file (a `304`'s caching facts, a repaired pixel size) can make the
/// file take a block more on disk (ext4 keeps attributes its inode has no room for in a block of their
/// own). The count takes the difference (``DiskStore/setCacheMetadata(_:for:)``, and
/// `DiskStoreCountedSizeTests`, where the budget follows it too); here, the last listing's entries.
@Suite struct DiskStoreAttributeGrowthTests {
    private let size = PixelSize(width: 1, height: 1)
    private func url(_ name: String) -> URL { URL(string: "https://images.example.com/\(name).jpg")! }

    /// A file that grows by an attribute while a trim lists the folder: the count is right (the name is
    /// restatted once the listing ends), and so must be the entry the listing keeps for the commits that
    /// make room from it. With the entry's size as listed (a block short), the next commit took that
    /// block to be still held after removing the file, and removed a file the budget did not need.
    @Test func aFileThatGrowsWhileATrimListsTheFolderIsKeptAtItsNewSize() throws {
        let folder = TemporaryDirectory("disk-attribute-growth-listing")
        let unit = try CountedSize.ofStored(byteCount: 1000)
        let newcomerBytes = Data(repeating: 9, count: unit + 1000)
        let newcomerSize = try CountedSize.ofStored(newcomerBytes)
        // One commit at least ten seconds after the listing would list the folder again itself.
        let disk = DiskStore(
            directory: folder.url, byteLimit: 1 << 30, attributes: GrowingAttributes(), relistingInterval: 600)
        for (name, secondsAgo) in [("grown", 300.0), ("warm", 200.0), ("hot", 100.0)] {
            try disk.store(Data(repeating: 1, count: 1000), pixelSize: size, for: url(name))
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-secondsAgo)],
                ofItemAtPath: disk.filePath(for: url(name)))
        }
        disk.waitForPendingTrims()
        var grown = 0
        disk.trim {
            disk.setCacheMetadata(.longForTests, for: url("grown"))
            grown = CountedSize.ofFile(atPath: disk.filePath(for: url("grown"))) ?? 0
        }
        try #require(grown > unit, "the attribute took no more space on this file system: the test shows nothing")
        #expect(disk.countedByteCount == disk.totalByteCount)
        // A store with the budget the three files take now; the newcomer needs the coldest file's room
        // (`grown`, the budget less two units) and no more.
        let budget = grown + 2 * unit
        try #require(newcomerSize <= grown, "the newcomer must fit in the coldest file's room")
        let tight = DiskStore(directory: folder.url, byteLimit: budget, relistingInterval: 600)
        try tight.store(newcomerBytes, pixelSize: size, for: url("newcomer"))
        #expect(!tight.contains(url("grown")))
        #expect(tight.contains(url("warm")), "a file the budget did not need was removed")
        #expect(tight.contains(url("hot")))
        #expect(tight.totalByteCount <= budget)
    }
}
