import Foundation
import Testing

@testable import AsyncImageCache

/// What another program may leave at a cached file's path: the store reads its own entries only,
/// never more than the budget allows, and touches nothing outside its folder.
@Suite struct DiskStoreHostileEntryTests {
    let url = URL(string: "https://images.example.com/photo.jpg")!
    let one = PixelSize(width: 1, height: 1)

    /// A cached file that has grown past the whole budget (here a sparse 64 MiB file under a 10 kB
    /// budget) was never written by the store, which refuses such bytes: it is not read into memory.
    @Test func aCachedFileLargerThanTheWholeBudgetIsNotRead() throws {
        let folder = TemporaryDirectory("disk-hostile")
        let disk = DiskStore(directory: folder.url, byteLimit: 10_000)
        try disk.store(Data(repeating: 1, count: 1000), pixelSize: one, for: url)
        disk.waitForPendingTrims()  // no trim runs while the file is damaged
        #expect(truncate(disk.filePath(for: url), 64 << 20) == 0)
        #expect(disk.data(for: url)?.count == nil)
        // A file within the budget is still read whole.
        #expect(truncate(disk.filePath(for: url), 10_000) == 0)
        #expect(disk.data(for: url)?.count == 10_000)
    }

    /// A file whose name is not UTF-8 (another program's, or one copied from a system that names files in
    /// Latin-1) was counted in the budget under a repaired name that names no file, so no trim could
    /// remove it: one larger than the budget left the tier keeping none of its own files, each write's
    /// trim removing the others to make room. It is no entry now, as a subfolder is not: the store never
    /// writes such a name.
    @Test func aFileWhoseNameIsNotUTF8TakesNoShareOfTheBudget() throws {
        let folder = TemporaryDirectory("disk-hostile")
        // Room for ten of the 10 kB files below.
        let budget = try CountedSize.ofStored(byteCount: 10_000) * 10
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        // "café" in Latin-1, half as large again as the budget (sparse: its size is what it counts).
        let foreignSize = budget * 3 / 2
        let path = Array((folder.url.path + "/").utf8) + [0x63, 0x61, 0x66, 0xE9]
        let descriptor = (path + [0]).withUnsafeBytes {
            open($0.baseAddress!.assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT | O_EXCL, 0o644)
        }
        #expect(descriptor >= 0)
        #expect(ftruncate(descriptor, off_t(foreignSize)) == 0)
        close(descriptor)
        let urls = (0..<5).map { URL(string: "https://images.example.com/\($0).jpg")! }
        for url in urls { try disk.store(Data(repeating: 1, count: 10_000), pixelSize: one, for: url) }
        disk.waitForPendingTrims()
        #expect(urls.filter(disk.contains).count == 5)
        let counted = urls.compactMap { CountedSize.ofFile(atPath: disk.filePath(for: $0)) }
        #expect(disk.totalByteCount == counted.reduce(0, +))
        var info = stat()
        let status = (path + [0]).withUnsafeBytes { stat($0.baseAddress!.assumingMemoryBound(to: CChar.self), &info) }
        #expect(status == 0 && info.st_size == foreignSize, "the other program's file is left as it was")
    }
}

/// A symbolic link or a folder at a cached file's path is not an entry: the store neither reads
/// through the link nor writes attributes or dates onto what it points at, and never removes a
/// folder's contents.
@Suite struct DiskStoreLinkedEntryTests {
    let url = URL(string: "https://images.example.com/photo.jpg")!

    @Test func aLinkAtACachedFilesPathIsNeverFollowed() throws {
        let folder = TemporaryDirectory("disk-link")
        let outside = TemporaryDirectory("disk-link-target")
        let target = outside.url.appendingPathComponent("private.jpg")
        let targetBytes = try SampleImages.jpeg(width: 300, height: 200)
        try targetBytes.write(to: target)
        let lastWeek = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded() - 7 * 86_400)
        try FileManager.default.setAttributes([.modificationDate: lastWeek], ofItemAtPath: target.path)
        let store = try ImageStore.makeForTesting(root: folder.url)
        try FileManager.default.createDirectory(at: store.directory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: store.disk.filePath(for: url), withDestinationPath: target.path)

        #expect(store.disk.data(for: url)?.count == nil)
        // Not an entry either: a load of it is not sent to the disk tier's fetch slots, to find nothing there.
        #expect(!store.disk.contains(url))
        #expect(store.fetchSource(of: url) == FetchSlots.source(of: url))
        #expect(store.cachedOriginalBytes(for: url)?.data.count == nil)
        #expect(store.cachedPixelSize(for: url) == nil)
        #expect(!store.disk.setPixelSize(PixelSize(width: 3, height: 3), for: url))
        try FileExtendedAttributes().setValue(
            PixelSizeAttribute.encode(PixelSize(width: 9, height: 9)), named: PixelSizeAttribute.name,
            atPath: target.path)
        #expect(store.disk.pixelSize(for: url) == nil)
        // What the link points at is as it was: bytes, date, and only the attribute set above.
        #expect(try Data(contentsOf: target) == targetBytes)
        let modified = try FileManager.default.attributesOfItem(atPath: target.path)[.modificationDate] as? Date
        #expect(abs(modified?.timeIntervalSince(lastWeek) ?? .infinity) < 1)
        #expect(
            PixelSizeAttribute.decode(
                FileExtendedAttributes().value(named: PixelSizeAttribute.name, atPath: target.path) ?? [])
                == PixelSize(width: 9, height: 9))
    }

    @Test func aFolderAtACachedFilesPathKeepsItsContents() throws {
        let folder = TemporaryDirectory("disk-link")
        let disk = DiskStore(directory: folder.url, byteLimit: 1000)
        let inside = URL(fileURLWithPath: disk.filePath(for: url)).appendingPathComponent("keep.txt")
        try FileManager.default.createDirectory(
            at: inside.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: inside)
        // Bytes over the budget remove the URL's older copy: never a folder and what it holds.
        #expect(throws: POSIXError(.EFBIG)) {
            try disk.store(Data(count: 2000), pixelSize: PixelSize(width: 1, height: 1), for: url)
        }
        #expect(try Data(contentsOf: inside) == Data("keep".utf8))
    }
}
