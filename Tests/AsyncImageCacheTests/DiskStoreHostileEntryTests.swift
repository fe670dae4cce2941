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
}
