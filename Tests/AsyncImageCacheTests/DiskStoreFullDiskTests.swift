import Foundation
import Spawn
import Testing

@testable import AsyncImageCache

/// A file system that fills before the budget does (a 1 MiB tmpfs under a 10 MiB budget): the
/// least recently used entries make room, as the budget would have, instead of every later write
/// failing while the oldest entries stay forever.
@Suite struct DiskStoreFullDiskTests {
    let one = PixelSize(width: 1, height: 1)

    @Test(.enabled(if: ScratchFileSystem.isAvailable, "needs root to mount a tmpfs"))
    func aFullFileSystemMakesRoomFromTheLeastRecentlyUsedEntries() throws {
        let volume = try ScratchFileSystem(byteCount: 1024 * 1024)
        // Removed files give their room back at once: see ``DiskStoreFullDiskAttributeTests``.
        try ChildProcess.withoutStartingChildren { try fillAndMakeRoom(on: volume) }
    }

    private func fillAndMakeRoom(on volume: ScratchFileSystem) throws {
        let folder = volume.url.appendingPathComponent("store", isDirectory: true)
        let disk = DiskStore(directory: folder, byteLimit: 10 << 20)
        let urls = (0..<10).map { URL(string: "https://example.com/\($0).jpg")! }
        for (index, url) in urls.enumerated() {
            let bytes = Data(repeating: UInt8(index), count: 200 * 1024)
            #expect(throws: Never.self, "write \(index)") { try disk.store(bytes, pixelSize: one, for: url) }
            #expect(disk.data(for: url) == bytes, "write \(index)")
        }
        disk.waitForPendingTrims()
        #expect(!disk.contains(urls[0]))
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!names.contains { $0.hasPrefix(".tmp-") })
        #expect(disk.totalByteCount == names.count * 200 * 1024)

        // A file system filled by something else, with less than one entry's room left in the tier,
        // is no reason to empty the tier: the write fails and the entries stay.
        let filler = volume.url.appendingPathComponent("filler")
        try volume.fill(leavingFree: 4096)
        let big = Data(repeating: 0xEE, count: 2 << 20)
        let kept = disk.entries().count
        #expect(throws: (any Error).self) { try disk.store(big, pixelSize: one, for: urls[0]) }
        #expect(disk.entries().count == kept)
        try FileManager.default.removeItem(at: filler)
    }
}

/// A full file system refuses the block that a file's caching facts take (ext4 gives the attributes that do
/// not fit in the inode one of their own) as it refuses a file's bytes: the write makes room for them the same
/// way, and says `ENOSPC`, not that the file system has no attributes, when it still cannot.
@Suite struct DiskStoreFullDiskAttributeTests {
    let one = PixelSize(width: 1, height: 1)
    let facts = HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 3600, entityTag: "\"v1\""))

    @Test(
        .enabled(
            if: ScratchFileSystem.isAvailable && ScratchFileSystem.keepsUserAttributes,
            "needs root to mount a tmpfs, and a kernel whose tmpfs keeps user attributes (6.6 or later)"))
    func aFullFileSystemMakesRoomForTheCachingFactsOfAWrite() throws {
        let volume = try ScratchFileSystem(byteCount: 1024 * 1024)
        // Without children started meanwhile. A child made while a file of the store is open holds a copy of
        // its descriptor until its exec, so the file's room stays taken after the store removes it. With the
        // other suite's tests starting `mount` beside three busy loops, this failed with ENOSPC in 3 of about 80
        // runs (0 of 50 with the lock): the entry removed to make room, its 200 KB still in use afterwards.
        try ChildProcess.withoutStartingChildren { try makeRoomForTheCachingFacts(on: volume) }
    }

    private func makeRoomForTheCachingFacts(on volume: ScratchFileSystem) throws {
        let folder = volume.url.appendingPathComponent("store", isDirectory: true)
        let disk = DiskStore(directory: folder, byteLimit: 10 << 20, attributes: SpaceNeedingAttributes())
        let urls = (0..<4).map { URL(string: "https://example.com/\($0).jpg")! }
        let bytes = Data(repeating: 0x5A, count: 200 * 1024)
        for url in urls.prefix(3) { try disk.store(bytes, pixelSize: one, metadata: facts, for: url) }
        // Room for the last write's bytes, and not a block more for its caching facts.
        try volume.fill(leavingFree: bytes.count + 4096)
        #expect(throws: Never.self) { try disk.store(bytes, pixelSize: one, metadata: facts, for: urls[3]) }
        #expect(disk.data(for: urls[3]) == bytes)
        #expect(disk.cacheMetadata(for: urls[3])?.entityTag == "\"v1\"")
        #expect(!disk.contains(urls[0]), "the least recently used entry made room")
        #expect(disk.contains(urls[1]) && disk.contains(urls[2]))
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!names.contains { $0.hasPrefix(DiskStore.temporaryPrefix) })
        try FileManager.default.removeItem(at: volume.url.appendingPathComponent("filler"))
    }

    @Test func cachingFactsThatFindNoRoomFailTheWriteAsOutOfSpace() throws {
        let folder = TemporaryDirectory("full-disk-facts")
        let disk = DiskStore(
            directory: folder.url, byteLimit: 1 << 20, attributes: SpaceNeedingAttributes(freeByteCount: .max))
        let url = URL(string: "https://example.com/photo.jpg")!
        #expect(throws: POSIXError(.ENOSPC)) {
            try disk.store(Data([1, 2, 3]), pixelSize: one, metadata: facts, for: url)
        }
        #expect(!disk.contains(url))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
    }
}

/// The real attributes, except that the caching facts fail with `ENOSPC` while the file system holding the
/// file has fewer than `freeByteCount` bytes free: the block ext4 would need for them. tmpfs keeps attributes
/// apart from its size limit, so only this shows a full file system refusing them.
struct SpaceNeedingAttributes: FileAttributesHook {
    var freeByteCount = 4096

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        var info = statvfs()
        if name == HTTPCacheMetadata.attributeName, statvfs(path, &info) == 0,
            Int(info.f_bavail) * Int(info.f_frsize) < freeByteCount
        {
            throw POSIXError(.ENOSPC)
        }
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
    }
}
