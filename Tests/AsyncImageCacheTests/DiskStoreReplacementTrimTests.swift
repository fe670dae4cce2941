import Foundation
import Testing

@testable import AsyncImageCache

/// Replacing a stored file makes room for the new bytes only: the old copy of the same URL goes with
/// the rename, so it is not counted as staying when deciding what else to evict.
@Suite struct DiskStoreReplacementTrimTests {
    @Test func replacingAFileEvictsOnlyWhatTheNewBytesNeed() throws {
        let folder = TemporaryDirectory("disk-replace")
        // Sizes in whole 4 KiB blocks, as 30, 10, 50 and 65 bytes were: each takes a space on disk of its own.
        let block = 4096
        let (oldestBytes, olderBytes, photoBytes) = (
            Data(repeating: 1, count: 3 * block), Data(repeating: 2, count: block), Data(repeating: 3, count: 5 * block)
        )
        let replacement = Data(repeating: 4, count: 7 * block)
        let (oldestSize, olderSize, photoSize, replacementSize) = (
            try CountedSize.ofStored(oldestBytes), try CountedSize.ofStored(olderBytes),
            try CountedSize.ofStored(photoBytes), try CountedSize.ofStored(replacement)
        )
        try #require(oldestSize <= photoSize && photoSize < replacementSize)
        // The three files fit; with the replacement in the photo's place they are one byte over, so the oldest
        // file must go and it is enough. Counting the old photo as staying would take the older file too.
        let budget = oldestSize + olderSize + replacementSize - 1
        let disk = DiskStore(directory: folder.url, byteLimit: budget)
        let oldest = URL(string: "https://example.com/oldest.jpg")!
        let older = URL(string: "https://example.com/older.jpg")!
        let photo = URL(string: "https://example.com/photo.jpg")!
        let one = PixelSize(width: 1, height: 1)
        try disk.store(oldestBytes, pixelSize: one, for: oldest)
        try disk.store(olderBytes, pixelSize: one, for: older)
        try disk.store(photoBytes, pixelSize: one, for: photo)
        for (url, secondsAgo) in [(oldest, 300.0), (older, 200.0), (photo, 100.0)] {
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-secondsAgo)], ofItemAtPath: disk.filePath(for: url))
        }
        disk.waitForPendingTrims()
        #expect(disk.totalByteCount == oldestSize + olderSize + photoSize)
        try disk.store(replacement, pixelSize: one, for: photo)
        #expect(disk.data(for: photo) == replacement)
        #expect(!disk.contains(oldest))
        #expect(disk.contains(older), "a file the budget did not need was evicted")
        disk.waitForPendingTrims()
        #expect(disk.contains(older))
        #expect(disk.totalByteCount == olderSize + replacementSize)
    }
}
