import Foundation
import Testing

@testable import AsyncImageCache

/// Replacing a stored file makes room for the new bytes only: the old copy of the same URL goes with
/// the rename, so it is not counted as staying when deciding what else to evict.
@Suite struct DiskStoreReplacementTrimTests {
    @Test func replacingAFileEvictsOnlyWhatTheNewBytesNeed() throws {
        let folder = TemporaryDirectory("disk-replace")
        let disk = DiskStore(directory: folder.url, byteLimit: 100)
        let oldest = URL(string: "https://example.com/oldest.jpg")!
        let older = URL(string: "https://example.com/older.jpg")!
        let photo = URL(string: "https://example.com/photo.jpg")!
        let one = PixelSize(width: 1, height: 1)
        try disk.store(Data(repeating: 1, count: 30), pixelSize: one, for: oldest)
        try disk.store(Data(repeating: 2, count: 10), pixelSize: one, for: older)
        try disk.store(Data(repeating: 3, count: 50), pixelSize: one, for: photo)
        for (url, secondsAgo) in [(oldest, 300.0), (older, 200.0), (photo, 100.0)] {
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-secondsAgo)], ofItemAtPath: disk.filePath(for: url))
        }
        disk.waitForPendingTrims()
        // 90 bytes now; replacing the 50-byte photo with 65 bytes leaves 105: removing the 30-byte
        // oldest file is enough (10 + 65 = 75 bytes).
        let replacement = Data(repeating: 4, count: 65)
        try disk.store(replacement, pixelSize: one, for: photo)
        #expect(disk.data(for: photo) == replacement)
        #expect(!disk.contains(oldest))
        #expect(disk.contains(older), "a file the budget did not need was evicted")
        disk.waitForPendingTrims()
        #expect(disk.contains(older))
        #expect(disk.totalByteCount == 75)
    }
}
