import Foundation

/// The writes a folder's background queue holds that have not reached the disk yet, by the
/// ``URL/cacheKey`` of their URL: what a read that misses the file finds instead, until the file is in
/// place (see ``DiskStore/storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``).
///
/// Writes are numbered as they are queued. A removal of the URL's file drops every write queued
/// before it: such a write is neither served nor committed, so that bytes a load found damaged, or a
/// response said not to store, do not come back when an older write lands.
struct StagedWrites {
    /// The latest write queued for a URL, what it will commit.
    struct Write {
        let data: Data
        let pixelSize: PixelSize
        let metadata: HTTPCacheMetadata?
        /// The disk tier's generation when the write was queued: after a ``DiskStore/removeAll()`` it is not committed.
        let generation: Int
        /// Whether the write is still wanted (no replacement of the image since), asked at its commit.
        let isCurrent: @Sendable () -> Bool
    }

    private struct Entry {
        var latest: Write
        var latestNumber: Int
        /// How many of the URL's writes are queued.
        var queued: Int
        /// Writes numbered up to this one are dropped.
        var droppedThrough: Int
    }

    private var entries: [String: Entry] = [:]
    private var lastNumber = 0

    /// Whether no write is queued.
    var isEmpty: Bool { entries.isEmpty }

    /// Records `write` as queued for `key`; returns its number.
    mutating func queue(_ write: Write, forKey key: String) -> Int {
        lastNumber += 1
        var entry = entries[key] ?? Entry(latest: write, latestNumber: 0, queued: 0, droppedThrough: 0)
        entry.latest = write
        entry.latestNumber = lastNumber
        entry.queued += 1
        entries[key] = entry
        return lastNumber
    }

    /// Records that a write queued for `key` has committed or been dropped; `key` is forgotten with its last one.
    mutating func finish(forKey key: String) {
        guard var entry = entries[key] else { return }
        entry.queued -= 1
        entries[key] = entry.queued > 0 ? entry : nil
    }

    /// Drops the writes queued for `key` so far: none of them is served or committed.
    mutating func dropQueued(forKey key: String) {
        guard var entry = entries[key] else { return }
        entry.droppedThrough = entry.latestNumber
        entries[key] = entry
    }

    /// Whether the write numbered `number` for `key` was dropped.
    func isDropped(_ number: Int, forKey key: String) -> Bool {
        guard let entry = entries[key] else { return false }
        return number <= entry.droppedThrough
    }

    /// The latest write queued for `key` and not dropped.
    func latest(forKey key: String) -> Write? {
        guard let entry = entries[key], entry.latestNumber > entry.droppedThrough else { return nil }
        return entry.latest
    }
}
