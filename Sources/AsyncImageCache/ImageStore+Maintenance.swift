import Foundation

extension ImageStore {
    /// Empties both memory tiers, the downloads held after a cancelled load, the size memo, and the HTTP
    /// caching facts kept in memory. The disk tier is kept, so sizes, bytes and caching facts of remote
    /// images are still found there.
    public func clearMemory() {
        variants.removeAll()
        originals.removeAll()
        undecodedOriginals.removeAll()
        sizeMemo.removeAll()
        cacheMetadata.removeAll()
    }

    /// Empties memory and deletes every file of the disk tier. A load already under way still
    /// delivers its image but keeps nothing it fetched or read before the call in either tier; one still
    /// waiting for a fetch slot then fetches anew, after the call, and keeps what it fetched.
    ///
    /// It returns once the files are gone, which means it first waits for the disk work already queued on
    /// the folder (a commit, a trim that lists it), and then deletes every file: with a large tier, call it
    /// off the main thread.
    ///
    /// When the folder cannot be listed (the process has used up its file descriptors, say), the folder
    /// is renamed aside whole, which needs none, and an empty one takes its place: no file of it is found
    /// again. The one renamed aside is deleted in the background once it can be, or when a store next
    /// opens the folder.
    public func removeAll() {
        // Memory is emptied as the disk raises the generation, once its files are gone: a load under
        // way keeps nothing, and one that starts meanwhile finds nothing old.
        disk.removeAll(emptyingMemory: clearMemory)
    }

    /// Forgets what the store has of `url`: every variant, the original and its size in memory, and a
    /// remote URL's disk file. For an image that changed behind an unchanged URL whose HTTP headers will
    /// not say so, such as a user's new avatar: the next load fetches it again. A load of `url` already
    /// under way still delivers its image but keeps nothing it fetched or read before the call, as with
    /// ``removeAll()``.
    ///
    /// A remote URL's file is removed before it returns, in turn with the disk work already queued on the
    /// folder (a commit, or a trim that lists a large folder, which can take tens of milliseconds): on the
    /// main thread it waits for them too.
    public func removeImage(for url: URL) {
        // Tried again under the new generation when a `removeAll()` begins between the read and the removal:
        // one of another store on the folder empties only that store's memory, not this one's.
        while true {
            let generation = disk.generation
            // On the disk's commit queue: a write of the old bytes that is already in place is removed here,
            // and one not yet in place finds the count raised and is dropped.
            let forget = { [self] in forgetInMemory(url, generation: generation) }
            if url.isRemote {
                // The generation is checked on the queue that runs `removeAll()`: `forget` then runs too.
                if disk.remove(url, generation: generation, then: { _ = forget() }) { return }
            } else if forget() {
                return  // local files and data: URLs have no file in the disk tier
            }
        }
    }

    /// Forgets what memory holds of `url`, its image, bytes, size and caching facts, and raises its
    /// replacement count, so that a decode or a write of the bytes it had, still running, keeps nothing
    /// after; unless a `removeAll()` began after `generation` was read (then it returns `false`). Under the
    /// generation's lock with memory, as a load keeps what it found: kept before, forgotten here; after, not
    /// kept.
    func forgetInMemory(_ url: URL, generation: Int) -> Bool {
        let key = url.cacheKey
        return disk.ifCurrent(generation) { () -> Void in
            replacements.withLock { $0.raise(forKey: key) }
            variants.removeVariants(of: url)
            originals.removeValue(forKey: key)
            undecodedOriginals.removeValue(forKey: key)
            sizeMemo.removeValue(forKey: key)
            cacheMetadata.removeValue(forKey: key)
        } != nil
    }

    /// Deletes disk-tier files not used (read, written, or served from memory) for longer than `maxAge`
    /// seconds. It lists the folder, after the disk work already queued on it: call it off the main thread.
    /// An image served from memory dates its file at most once a minute, so with a `maxAge` under a minute
    /// the file of one served from memory in the last minute may go.
    ///
    /// - Parameter maxAge: The age in seconds past which a file goes; 7 days by default. `0` or less
    ///   deletes every file last used before the call; `.infinity` and `.nan` delete none.
    /// - Returns: The number of files deleted.
    @discardableResult
    public func evictExpired(maxAge: TimeInterval = 7 * 24 * 60 * 60) -> Int {
        disk.removeEntries(unusedFor: maxAge)
    }

    /// The number of files in the disk tier and the bytes they take on disk, as the budget counts them
    /// (see ``Configuration-swift.struct/diskByteLimit``). A load's file is counted once
    /// it is written, which happens in the background after the load is delivered: call
    /// ``waitForDiskMaintenance()`` first for a count that includes the loads that have returned.
    public func diskUsage() -> (fileCount: Int, byteCount: Int) {
        let entries = disk.entries()
        return (entries.count, entries.reduce(0) { $0 + $1.byteCount })
    }

    /// When the disk tier's least recently used file was last used (read, written or served from
    /// memory); `nil` when the tier is empty. The next trim removes that file first.
    public func oldestDiskUse() -> Date? {
        disk.entries().lazy.map(\.lastUsed).min()
    }

    /// Blocks until the disk writes of earlier loads are in place (a load delivers its image without
    /// waiting for its file), the size attributes that earlier ``cachedPixelSize(for:)`` calls repaired
    /// are written back, and the disk trims scheduled by earlier writes have run (for tools and tests).
    ///
    /// A program that ends through `exit`, or by returning from its main code, need not call it for the
    /// writes: its exit waits for them first, up to 10 seconds in all. One ended by a signal (`SIGTERM`,
    /// `SIGKILL`) loses the writes still queued: the next run downloads those images again.
    public func waitForDiskMaintenance() {
        disk.waitForPendingTrims()
    }
}
