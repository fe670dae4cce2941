import Foundation
import Testing

@testable import AsyncImageCache

/// Two stores with the same name share a folder (two `ImageStore`s in one app, or an app and its
/// extension): opening one must not delete the temporary file of a write the other has in progress,
/// and in one process the budget holds after every write of either.
@Suite struct DiskStoreSharedFolderTests {
    @Test func openingTheFolderAgainDoesNotDeleteAWriteInProgress() throws {
        let folder = TemporaryDirectory("disk-shared")
        let url = URL(string: "https://images.example.com/photo.jpg")!
        // The attribute is set between writing the temporary file and renaming it into place.
        let disk = DiskStore(
            directory: folder.url, byteLimit: 1 << 20, attributes: OpeningTheFolderAgain(directory: folder.url))
        let bytes = Data((0..<500).map { UInt8($0 % 251) })
        try disk.store(bytes, pixelSize: PixelSize(width: 4, height: 3), for: url)
        #expect(disk.data(for: url) == bytes)
        #expect(disk.pixelSize(for: url) == PixelSize(width: 4, height: 3))
    }

    @Test func theBudgetHoldsAfterEveryWriteOfEitherStore() throws {
        let folder = TemporaryDirectory("disk-shared")
        // Room for three of the 3000-byte files, not four.
        let budget = try CountedSize.ofStored(Data(count: 3000)) * 10 / 3
        let first = DiskStore(directory: folder.url, byteLimit: budget)
        let second = DiskStore(directory: folder.url, byteLimit: budget)
        func write(_ store: DiskStore, _ name: String) throws {
            try store.store(
                Data(count: 3000), pixelSize: PixelSize(width: 1, height: 1),
                for: URL(string: "https://example.com/\(name).jpg")!)
        }
        var totals: [Int] = []
        for round in 0..<20 {
            // The first store counts a folder that holds only its own file; the second then fills it.
            second.removeAll()
            try write(first, "first/\(round)-a")
            first.waitForPendingTrims()
            try write(second, "second/\(round)-a")
            try write(second, "second/\(round)-b")
            second.waitForPendingTrims()
            try write(first, "first/\(round)-b")
            totals.append(first.totalByteCount)
        }
        #expect(totals.allSatisfy { $0 <= budget }, "\(totals)")
    }

    /// A store opened on the folder through a symbolic link shares the folder's queue and count with
    /// one opened on its real path; before, each had its own and kept the budget among its own writes.
    @Test func aStoreOpenedThroughASymbolicLinkSharesTheFolder() throws {
        let folder = TemporaryDirectory("disk-shared")
        let real = folder.url.appendingPathComponent("real")
        let link = folder.url.appendingPathComponent("link")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        // Room for three of the 3000-byte files, not four.
        let budget = try CountedSize.ofStored(Data(count: 3000)) * 10 / 3
        let first = DiskStore(directory: real, byteLimit: budget)
        let second = DiskStore(directory: link, byteLimit: budget)
        for index in 0..<8 {
            try (index.isMultiple(of: 2) ? first : second).store(
                Data(count: 3000), pixelSize: PixelSize(width: 1, height: 1),
                for: URL(string: "https://example.com/\(index).jpg")!)
            #expect(first.totalByteCount <= budget, "after write \(index)")
        }
        #expect(first.listingCount == second.listingCount)

        // Also a folder not made yet, whose parent is reached through the link: its first write makes
        // it, and a store opened after on the real path shares it with the one opened before.
        let early = DiskStore(directory: link.appendingPathComponent("later"), byteLimit: budget)
        try early.store(
            Data(count: 10), pixelSize: PixelSize(width: 1, height: 1), for: URL(string: "https://example.com/a.jpg")!)
        let late = DiskStore(directory: real.appendingPathComponent("later"), byteLimit: budget)
        #expect(
            DiskStore.resolvedPath(of: link.appendingPathComponent("later/"))
                == real.appendingPathComponent("later").standardizedFileURL.path)
        #expect(early.listingCount == late.listingCount)
        #expect(
            late.countedByteCount
                == CountedSize.ofFile(atPath: late.filePath(for: URL(string: "https://example.com/a.jpg")!)))
    }
}

/// The real attributes, except that setting one first opens a second store on `directory`, as
/// another store of the same name may do at any moment.
struct OpeningTheFolderAgain: FileAttributesHook {
    let directory: URL

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        openAndSweep()
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
    }

    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        openAndSweep()
        try FileExtendedAttributes().setValue(value, named: name, onDescriptor: descriptor)
    }

    /// Opens the second store and waits for its sweep of leftovers, which runs on the disk queue. The
    /// write calls this on its own thread (the test calls `store` directly), never on that queue.
    private func openAndSweep() {
        DiskStore(directory: directory, byteLimit: 1 << 20).waitForPendingTrims()
    }
}
