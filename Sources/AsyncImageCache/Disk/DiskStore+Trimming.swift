import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Listing and trimming: the stored files, least recently used first, removed until the folder is within
/// its budget or past an age, on the folder's disk queue.
extension DiskStore {
    /// Removes every stored file. On the trim queue, like commits: a write in progress is either
    /// committed before and removed here, or finds the generation raised and is dropped.
    ///
    /// The generation is raised once the files are gone, in one step with `emptyingMemory` (a store's
    /// memory tiers): a load that reads the new generation finds neither the old files nor what memory
    /// held of them, and one that read the old one keeps nothing.
    ///
    /// A folder that cannot be listed now (the process is out of descriptors, say) is not taken for an
    /// empty one: it is moved aside whole, which needs no descriptor, and removed once it can be listed
    /// (``moveAside()``). Otherwise the files would stay and be served again once descriptors free up,
    /// after a call whose point may be to forget them (a user signing out).
    func removeAll(emptyingMemory: () -> Void = {}) {
        trimQueue.sync {
            if let (entries, _) = readListing() {
                for entry in entries { _ = entry.remove() }
            } else {
                moveAside()
            }
            usage.withLock { $0.bytes = nil }
            folder.snapshot.withLock { $0 = nil }
            generationBox.withLock { generation in
                generation += 1
                emptyingMemory()
            }
        }
    }

    /// Removes the files not used for longer than `maxAge` seconds; returns how many.
    /// `afterListing` runs once the folder is listed (for tests).
    ///
    /// On the disk queue, as commits and trims are: a write of this process never replaces a file
    /// between the listing and the removal, and each file that goes comes off the budget's count (the
    /// next write does not list the folder again). Reads are not
    /// queued, and another process may write meanwhile: each file's date is looked at again just
    /// before it goes, and one used since the listing stays.
    @discardableResult
    func removeEntries(unusedFor maxAge: TimeInterval, now: Date = Date(), afterListing: () -> Void = {}) -> Int {
        let cutoff = now.addingTimeInterval(-maxAge)
        return trimQueue.sync {
            guard var entries = readListing()?.entries else { return 0 }
            afterListing()
            // As a trim does: a file dated in the future would otherwise never be unused long enough.
            Self.dateFutureUseNow(&entries, now: now)
            var removed = 0
            for entry in entries where entry.lastUsed < cutoff {
                guard let lastUsed = Self.modificationDate(atPath: entry.path), lastUsed < cutoff,
                    removeCounted(named: entry.name)
                else { continue }
                removed += 1
            }
            return removed
        }
    }

    /// The total size of the stored files in bytes.
    var totalByteCount: Int { entries().reduce(0) { $0 + $1.byteCount } }

    struct Entry {
        /// The file's name in the folder.
        var name: String
        /// The file's full path.
        var path: String
        var byteCount: Int
        var lastUsed: Date

        /// Deletes the file; whether it went.
        func remove() -> Bool { unlink(path) == 0 }
    }

    /// Every stored file: the regular files in the folder, temporary files excluded (a symbolic
    /// link, a subfolder, a FIFO or a file whose name is not UTF-8 is not an entry, and is never followed).
    func entries() -> [Entry] {
        listing().entries
    }

    /// The regular files in the folder: the stored files, and apart the temporary ones. None when the
    /// folder cannot be listed now (see ``readListing()``).
    func listing() -> (entries: [Entry], temporaries: [Entry]) {
        readListing() ?? ([], [])
    }

    /// The regular files in the folder, the stored files and apart the temporary ones; `nil` when the
    /// folder is there but cannot be listed now (no descriptor free, no memory, no permission), which
    /// is not the same as empty: a removal or a count must not go by it.
    func readListing() -> (entries: [Entry], temporaries: [Entry])? {
        folder.listings.withLock { $0 += 1 }
        folder.lastListed.withLock { $0 = .now() }
        guard let files = Self.regularFiles(inFolderAtPath: directoryPath) else { return nil }
        var entries: [Entry] = []
        var temporaries: [Entry] = []
        for entry in files {
            if entry.name.hasPrefix(Self.temporaryPrefix) {
                temporaries.append(entry)
            } else {
                entries.append(entry)
            }
        }
        return (entries, temporaries)
    }

    /// The temporary files in the folder at `path`: only those are looked at (`fstatat`), not every stored
    /// file as a ``listing()`` does, nor is it counted as one.
    static func temporaries(inFolderAtPath path: String) -> [Entry] {
        let prefix = Array(temporaryPrefix.utf8CString.dropLast())
        return regularFiles(inFolderAtPath: path) { strncmp($0, prefix, prefix.count) == 0 } ?? []
    }

    /// The regular files in the folder at `path` (which ends with a slash) whose names `isWanted` takes,
    /// each looked at only then; a name that is not UTF-8 is skipped. None when there is no folder there;
    /// `nil` when there is one that cannot be read (`EMFILE`, `ENFILE`, `ENOMEM`, `EACCES`, or `readdir`
    /// failing part way).
    ///
    /// Read with `readdir` and `fstatat`: Foundation's directory listing with resource values took
    /// about 300 ms for 4,000 files here, where this takes 10, and a full tier lists its folder on
    /// every write that needs room.
    private static func regularFiles(
        inFolderAtPath path: String, named isWanted: (UnsafePointer<CChar>) -> Bool = { _ in true }
    ) -> [Entry]? {
        items(ofType: S_IFREG, inFolderAtPath: path, named: isWanted)?.map { name, info in
            Entry(
                name: name, path: path + name, byteCount: countedSize(of: info), lastUsed: modificationDate(of: info))
        }
    }

    /// The items of `type` (`S_IFREG`, `S_IFDIR`) in the folder at `path` whose names `isWanted` takes, with
    /// their status (a symbolic link is not followed, so never one of them); a name that is not UTF-8 is
    /// skipped. None when there is no folder there; `nil` when there is one that cannot be read.
    static func items(
        ofType type: mode_t, inFolderAtPath path: String, named isWanted: (UnsafePointer<CChar>) -> Bool
    ) -> [(name: String, info: stat)]? {
        guard let folder = opendir(path) else { return errno == ENOENT || errno == ENOTDIR ? [] : nil }
        defer { closedir(folder) }
        let descriptor = dirfd(folder)
        var items: [(name: String, info: stat)] = []
        while true {
            errno = 0
            guard let item = readdir(folder) else {
                if errno != 0 { return nil }
                break
            }
            var info = stat()
            let name = withUnsafeBytes(of: &item.pointee.d_name) { bytes -> String? in
                let name = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
                guard isWanted(name), fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
                // Not UTF-8 (another program's file): repaired into a string, the name would name no file,
                // and a trim could neither remove it nor stop counting it. The store never writes one.
                return String(validatingCString: name)
            }
            guard let name, info.st_mode & S_IFMT == type else { continue }
            items.append((name, info))
        }
        return items
    }

    /// Removes least recently used files until the total is within `byteLimit`, at `now`, on the disk
    /// queue (where every count of the folder runs). `afterListing` runs once the folder is listed,
    /// before the count is recorded (for tests).
    func trim(now: Date = Date(), afterListing: () -> Void = {}) {
        trimQueue.sync { trim(toBytes: byteLimit, now: now, afterListing: afterListing) }
    }

    /// Removes least recently used files until the total is at most `limit` bytes, and records
    /// the total that remains. The file named `spared`, about to be replaced, is neither counted
    /// nor removed (but is recorded, as the replacement subtracts it). Temporary files that
    /// interrupted writes left since the store opened go too: they are not counted in the budget.
    func trim(
        toBytes limit: Int, sparing spared: String? = nil, now: Date = Date(), afterListing: () -> Void = {}
    ) {
        // A commit within the relisting interval makes room from the last listing, kept up since.
        if let spared, let (kept, listedAt) = folder.snapshot.withLock({ $0 }),
            DispatchTime.now() < listedAt + relistingInterval, let counted = usage.withLock({ $0.bytes })
        {
            var entries = kept.filter { $0.name != spared }
            var total = counted - (Self.fileSize(atPath: directoryPath + spared) ?? 0)
            let (removed, foundGone) = removeColdest(from: &entries, total: &total, limit: limit, stoppingAtGone: true)
            folder.snapshot.withLock { $0?.entries.removeAll { removed.contains($0.name) } }
            // A file of the listing gone that this trim did not remove: another process, or a user clearing the
            // cache, removed files since, and the count still holds them. Room made from it would take the
            // files written since instead, one per write until the next listing: the folder is listed now (also,
            // needlessly but rightly, after a removal of this process's that the listing still holds).
            guard foundGone else { return }
        }
        let listedAt = DispatchTime.now()
        // A folder that cannot be listed now is neither counted nor trimmed: a count of none would let
        // writes past the budget until the next listing.
        guard let (listedEntries, temporaries) = listingForCount() else { return }
        var entries = listedEntries
        afterListing()
        Self.dateFutureUseNow(&entries, now: now)
        Self.removeLeftovers(among: temporaries, now: now)
        let listed = entries
        entries.removeAll { $0.name == spared }
        var total = entries.reduce(0) { $0 + $1.byteCount }
        entries.sort { $0.lastUsed < $1.lastUsed }
        let removed = removeColdest(from: &entries, total: &total, limit: limit).removed
        recordCount(
            listed.reduce(0) { $0 + $1.byteCount }, listed: listed,
            snapshot: (listed.filter { !removed.contains($0.name) }.sorted { $0.lastUsed < $1.lastUsed }, listedAt))
    }

    /// Removes files of `entries`, sorted coldest first, until `total` is at most `limit`; the names removed.
    /// With `stoppingAtGone`, it stops at the first entry whose file is gone (`total` still holds it), and
    /// says so in `foundGone`.
    private func removeColdest(
        from entries: inout [Entry], total: inout Int, limit: Int, stoppingAtGone: Bool = false
    ) -> (removed: Set<String>, foundGone: Bool) {
        var removed = Set<String>()
        defer { entries.removeAll { removed.contains($0.name) } }
        guard total > limit else { return (removed, false) }
        func remove(_ entry: Entry) {
            // Noted as any removal during the count is, so the count takes them off.
            if removeCounted(named: entry.name) {
                total -= entry.byteCount
                removed.insert(entry.name)
            }
        }
        // A file larger than the limit goes in any case (a trim cannot end while it is there), so it goes
        // first, however recently used: the colder files it would otherwise take with it stay.
        for entry in entries where entry.byteCount > limit {
            if stoppingAtGone, Self.modificationDate(atPath: entry.path) == nil { return (removed, true) }
            remove(entry)
        }
        // Reads are not queued: a file read since the listing is no longer where the listing put it. It
        // waits, least recently read first, and goes before the first file in the list used after its read.
        var readSinceListing: [(entry: Entry, lastUsed: Date)] = []
        for entry in entries where total > limit && !removed.contains(entry.name) {
            let lastUsed = Self.modificationDate(atPath: entry.path)
            if stoppingAtGone, lastUsed == nil { return (removed, true) }
            if let lastUsed, lastUsed > entry.lastUsed {
                let index = readSinceListing.firstIndex { $0.lastUsed > lastUsed } ?? readSinceListing.endIndex
                readSinceListing.insert((entry, lastUsed), at: index)
                continue
            }
            // Files read before this one was last used go first: between listings, the list goes on with the
            // files written since, each perhaps after some of those reads.
            while total > limit, let read = readSinceListing.first, read.lastUsed < entry.lastUsed {
                readSinceListing.removeFirst()
                remove(read.entry)
            }
            if total > limit { remove(entry) }
        }
        // The budget comes first: when too few files were left unread, those read go too, least recently
        // read first.
        for (entry, _) in readSinceListing where total > limit { remove(entry) }
        return (removed, false)
    }

    /// Dates `now` the entries last used after `now` (a clock set back, a file copied in), in the list
    /// and on disk: a file dated in the future would otherwise be the newest, kept by every trim and
    /// never expired, for good. Dated now, it ages from here like the others.
    private static func dateFutureUseNow(_ entries: inout [Entry], now: Date) {
        let seconds = now.timeIntervalSince1970.rounded(.down)
        let time = timespec(tv_sec: Int(seconds), tv_nsec: Int((now.timeIntervalSince1970 - seconds) * 1e9))
        for index in entries.indices where entries[index].lastUsed > now {
            entries[index].lastUsed = now
            _ = utimensat(AT_FDCWD, entries[index].path, [time, time], AT_SYMLINK_NOFOLLOW)
        }
    }

    /// Runs a trim on the background queue, at least ``relistingInterval`` after the folder was last
    /// listed; writes that arrive while one is pending share it. A store released meanwhile drops it;
    /// the next write of a store on the folder schedules another.
    func scheduleTrim() {
        let ticket = trimIsQueued.withLock { state -> Int? in
            guard !state.isQueued else { return nil }
            state.isQueued = true
            state.ticket += 1
            return state.ticket
        }
        guard let ticket else { return }
        let due = folder.lastListed.withLock { $0 }.map { $0 + relistingInterval } ?? .now()
        trimQueue.asyncAfter(deadline: due) { [weak self] in self?.runScheduledTrim(ticket: ticket) }
    }

    /// The trim ``scheduleTrim()`` scheduled as `ticket` (`nil`: whichever is waiting), on the disk queue,
    /// unless a wait ran it already.
    private func runScheduledTrim(ticket: Int? = nil) {
        let runs = trimIsQueued.withLock { state in
            guard state.isQueued, ticket == nil || ticket == state.ticket else { return false }
            state.isQueued = false
            return true
        }
        if runs { trim(toBytes: byteLimit) }
    }

    /// Blocks until the writes queued in the background before the call have committed (see
    /// ``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``), then runs the trim
    /// scheduled by earlier writes now, if one is still waiting for its time, and blocks until it and
    /// any other work on the disk queue have finished, the attribute writes that size lookups left waiting
    /// (``writeLater(_:)``) made first (for tests and the command line).
    func waitForPendingTrims() {
        folder.writeQueue.sync {}
        trimQueue.sync {
            makeWaitingAttributeWrites(endingTheRun: false)
            runScheduledTrim()
        }
    }
}
