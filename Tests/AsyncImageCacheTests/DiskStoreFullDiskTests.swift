import Foundation
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
