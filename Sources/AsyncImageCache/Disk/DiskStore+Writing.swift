import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes: an atomic commit of bytes and attributes, queued in the background for loads, making room
/// within the budget or on a full file system, and removals, each in one step with the count.
extension DiskStore {
    /// The number of ``removeAll()`` calls so far: read it before fetching the bytes of a write.
    var generation: Int { generationBox.withLock { $0 } }

    /// Runs `body` when no ``removeAll()`` has begun since `generation` was read, and keeps the next one
    /// from beginning until `body` returns; `nil` without running it otherwise. What `body` puts in
    /// memory is then in place before a store empties its memory after a `removeAll()`, or never put.
    func ifCurrent<Result>(_ generation: Int, _ body: () -> Result) -> Result? {
        generationBox.withLock { current in current == generation ? body() : nil }
    }

    /// Stores `data` for `url` atomically, with `pixelSize` in its attribute when the file system
    /// allows, then schedules a trim. Bytes that take more than the whole budget on disk (attributes
    /// included) are not stored (`EFBIG`), and an older copy of `url` goes: making room for them would
    /// empty the tier, and they would go next.
    /// With `generation`, bytes fetched before a ``removeAll()`` that has run since are not stored
    /// (`ECANCELED`), nor are they when `isCurrent`, asked in the same step, says no. `committed` runs in
    /// that step once the file is in place: no other write of this folder commits, and no `removeAll()`
    /// begins, in between.
    ///
    /// On a file system that fills before the budget does (`ENOSPC`), whether for the bytes or for the
    /// caching facts' attribute, the least recently used files make room and that step is tried once more;
    /// the error stays `ENOSPC` when it fails again.
    ///
    /// `isDropped` is asked in one step with the rename, as ``remove(_:)`` removes a file: a write queued
    /// before a removal of its URL's file is dropped then (`ECANCELED`), never put in place after it.
    func store(
        _ data: Data, pixelSize: PixelSize, metadata: HTTPCacheMetadata? = nil, for url: URL, generation: Int? = nil,
        isCurrent: () -> Bool = { true }, committed: () -> Void = {}, isDropped: () -> Bool = { false }
    ) throws {
        // Whether the write would still be committed, asked on the disk queue before anything is removed for
        // it (and `isDropped` again at the rename): a write dropped, or queued before a `removeAll()` or a
        // replacement, takes no room from the other files and leaves a file put in place since.
        func isWanted() -> Bool {
            if let generation, generation != self.generation { return false }
            return isCurrent() && !isDropped()
        }
        // Bytes that would take more than the whole budget are not kept, and the older copy goes: only it
        // (writes queued after this one stay), and only as a commit would replace it.
        func refuseAsTooLarge() -> POSIXError {
            trimQueue.sync {
                guard isWanted() else { return }
                _ = removeCounted(named: Self.fileName(for: url), unless: isDropped)
            }
            return POSIXError(.EFBIG)
        }
        guard data.count <= byteLimit else { throw refuseAsTooLarge() }
        let temporaryName = Self.temporaryName()
        let temporary = directory.appendingPathComponent(temporaryName)
        Self.writesInProgress.withLock { _ = $0.insert(temporaryName) }
        defer { Self.writesInProgress.withLock { _ = $0.remove(temporaryName) } }
        // Held open, and so locked, until the file is renamed into place or removed.
        let descriptor: Int32
        do {
            descriptor = try writeLocked(data, to: temporary)
        } catch let error as POSIXError where error.code == .ENOENT {
            // The first write makes the folder, as does the first after a user removed it: once. Told by the
            // error, not by looking: another write may have made the folder since this one found it missing.
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            descriptor = try writeLocked(data, to: temporary)
        } catch  where Self.isOutOfSpace(error) {
            // The file system filled before the budget did: the least recently used entries make room,
            // as the budget would have, and the write is tried once more.
            guard let made = makeRoom(forBytes: data.count, if: isWanted) else { throw POSIXError(.ECANCELED) }
            guard made else { throw error }
            descriptor = try writeLocked(data, to: temporary)
        }
        defer { close(descriptor) }
        // A file system without extended attributes still gets the bytes; sizes then come from
        // the header.
        try? attributes.setValue(
            PixelSizeAttribute.encode(pixelSize), named: PixelSizeAttribute.name, atPath: temporary.path)
        // Where the caching facts cannot be written (a file system without extended attributes), a file
        // that goes stale is not kept: without them it would be read back, after a relaunch, as fresh
        // until evicted and never asked for again. Facts that never go stale need no attribute.
        if let metadata {
            do {
                try writeCacheMetadata(metadata, atPath: temporary.path)
            } catch  where metadata.expires != nil {
                do {
                    try retryCacheMetadata(metadata, atPath: temporary.path, failure: error, if: isWanted)
                } catch {
                    try? FileManager.default.removeItem(at: temporary)
                    throw error
                }
            } catch {}
        }
        // What the file takes on disk, its attributes included, as the budget counts it: a few bytes
        // under the budget can take a block over it.
        var written = stat()
        var measured = fstat(descriptor, &written) == 0
        // XFS reserves space past the end of a file it sees grow, until the file is closed: an 8 MB image
        // took 16 MB while open, and commits made room for twice its size. A truncation to its own size
        // gives that space back at once, but only where there is some: a size change makes XFS write the
        // file's bytes out to the device first, and waits for them (every commit did, 1 MB files included).
        if measured, Self.holdsSpacePastItsEnd(written) {
            _ = ftruncate(descriptor, written.st_size)
            measured = fstat(descriptor, &written) == 0
        }
        let counted = measured ? Self.countedSize(of: written) : data.count
        guard counted <= byteLimit else {
            try? FileManager.default.removeItem(at: temporary)
            throw refuseAsTooLarge()
        }
        let name = Self.fileName(for: url)
        let destination = directoryPath + name
        // Room is made before the file appears, so the budget holds throughout, not only once a
        // trim catches up. Commits go one at a time on the trim queue, and the caller waits for its
        // turn there: loads write through ``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``
        // instead, so that their delivery never waits behind another commit, a trim or a `removeAll()`.
        let renamed = trimQueue.sync { () -> Int32? in
            guard isWanted() else { return nil }
            let replaced = Self.fileSize(atPath: destination) ?? 0
            // The older copy of `url` goes with the rename: room is made among the other files. A folder that
            // cannot be counted now is not trimmed either; the next trim that can list it makes up for it.
            if let before = knownUsage(), before - replaced + counted > byteLimit {
                trim(toBytes: byteLimit - counted, sparing: name)
            }
            // A rename keeps the file's modification date.
            let entry = Entry(
                name: name, path: destination, byteCount: counted,
                lastUsed: measured ? Self.modificationDate(of: written) : Date())
            let result = usage.withLock { usage -> Int32? in
                guard !isDropped() else { return nil }
                // Asked again in this step: a removal may have taken the older copy since.
                let replaced = Self.fileSize(atPath: destination) ?? 0
                let result = rename(temporary.path, destination)
                guard result == 0 else { return result }
                usage.bytes = usage.bytes.map { $0 - replaced + counted }
                // In the same step as the count: an attribute written onto the new file once the lock is
                // free (a size repair) finds its entry here and takes the difference onto it.
                folder.snapshot.withLock { snapshot in
                    snapshot?.entries.removeAll { $0.name == name }
                    snapshot?.entries.append(entry)
                }
                return result
            }
            if result == 0 { committed() }
            return result
        }
        guard renamed == 0 else {
            let code = renamed == nil ? .ECANCELED : POSIXErrorCode(rawValue: errno) ?? .EIO
            try? FileManager.default.removeItem(at: temporary)
            throw POSIXError(code)
        }
        // Another process may share the folder: a background trim re-reads what is really there.
        scheduleTrim()
    }

    /// ``store(_:pixelSize:metadata:for:generation:isCurrent:committed:isDropped:)`` on the folder's write queue,
    /// returning at once: for a load, whose delivery must not wait for the disk queue (another commit, a
    /// trim listing thousands of files, a `removeAll()` deleting them) nor hold one of the few threads
    /// of Swift's cooperative pool meanwhile. The write is atomic as any other, and its commit checks
    /// `generation` and `isCurrent` when it runs: queued before a ``removeAll()``, it is committed
    /// before it (and removed by it) or dropped. Failures are dropped: the next launch downloads
    /// the image again. ``waitForPendingTrims()`` waits for the writes queued before it, as a normal exit
    /// does (``exitWaitLimit``); one queued when the process is killed is lost, never left half-written.
    ///
    /// - Returns: `false`, queuing nothing, when the writes already queued on the folder hold
    ///   ``backgroundWriteByteLimit`` bytes or `data` and `metadata` would take them past it (a disk slower than the
    ///   downloads): the caller writes with ``store(_:pixelSize:metadata:for:generation:isCurrent:committed:isDropped:)``
    ///   then, so that the bytes waiting for the disk stay bounded. A write is queued whatever its size when
    ///   none waits.
    func storeInBackground(
        _ data: Data, pixelSize: PixelSize, metadata: HTTPCacheMetadata?, for url: URL, generation: Int,
        isCurrent: @escaping @Sendable () -> Bool
    ) -> Bool {
        let limit = backgroundWriteByteLimit
        let key = url.cacheKey
        // What the write holds until it lands: with tiny images and long validators, mostly the validators.
        let cost = data.count + (metadata?.memoryCost(forKey: key) ?? 0)
        let queued = folder.queuedWriteBytes.withLock { bytes -> Bool in
            guard bytes == 0 || cost <= limit - bytes else { return false }
            bytes += cost
            return true
        }
        guard queued else { return false }
        let write = StagedWrites.Write(
            data: data, pixelSize: pixelSize, metadata: metadata, generation: generation, isCurrent: isCurrent)
        // Numbered and queued in one step, so that writes run in the order of their numbers: the latest
        // write a read finds is the one whose file stays, also when two stores on the folder write one URL.
        folder.staged.withLock { staged in
            let number = staged.queue(write, forKey: key)
            folder.writeQueue.async { [self] in
                defer {
                    folder.queuedWriteBytes.withLock { $0 -= cost }
                    // After the rename: a read that missed the file finds it once the write is forgotten.
                    folder.staged.withLock { $0.finish(forKey: key) }
                }
                try? store(
                    data, pixelSize: pixelSize, metadata: metadata, for: url, generation: generation,
                    isCurrent: isCurrent, committed: {},
                    isDropped: { folder.staged.withLock { $0.isDropped(number, forKey: key) } })
            }
        }
        return true
    }

    /// Returns once the writes of ``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``
    /// queued before the call have committed or been dropped, without holding a thread meanwhile.
    func queuedWrites() async {
        await withCheckedContinuation { continuation in folder.writeQueue.async { continuation.resume() } }
    }

    /// Writes `metadata` onto the temporary file at `path` once more after it failed with `failure`, when that
    /// was for want of space: a full file system refuses the block an attribute takes (on ext4, one that
    /// does not fit in the inode) as it refuses the bytes', and room is made for it the same way. Throws
    /// `failure`, or the retry's, when it still fails (`ENOSPC` stays `ENOSPC`), `ECANCELED` when the write
    /// will not be committed, and `EOPNOTSUPP` for any other refusal (no extended attributes).
    private func retryCacheMetadata(
        _ metadata: HTTPCacheMetadata, atPath path: String, failure: any Error, if isWanted: () -> Bool
    ) throws {
        guard Self.isOutOfSpace(failure) else { throw POSIXError(.EOPNOTSUPP) }
        guard let made = makeRoom(forBytes: metadata.encoded.count, if: isWanted) else {
            throw POSIXError(.ECANCELED)
        }
        guard made else { throw failure }
        do {
            try writeCacheMetadata(metadata, atPath: path)
        } catch {
            throw Self.isOutOfSpace(error) ? error : POSIXError(.EOPNOTSUPP)
        }
    }

    /// Room a write needs beyond its bytes on a full file system: the folder's entry, the attributes,
    /// the rounding of the last block.
    private static let freeSpaceSlack = 64 * 1024

    /// Whether a write failed for want of space (`ENOSPC`, or a quota's `EDQUOT`).
    private static func isOutOfSpace(_ error: any Error) -> Bool {
        let error = error as NSError
        let posix = error.domain == NSPOSIXErrorDomain ? error : error.userInfo[NSUnderlyingErrorKey] as? NSError
        if error.domain == NSCocoaErrorDomain, error.code == CocoaError.fileWriteOutOfSpace.rawValue { return true }
        return posix?.domain == NSPOSIXErrorDomain && [ENOSPC, EDQUOT].contains(Int32(posix?.code ?? 0))
    }

    /// Removes least recently used entries until the file system has room for `byteCount` bytes, on
    /// the commit queue. Removes nothing, and returns `false`, when even every entry would not make
    /// room: the file system was filled by others, and emptying the tier would not help. Removes nothing, and
    /// returns `nil`, when `isWanted`, asked on that queue, says the write will not be committed.
    private func makeRoom(forBytes byteCount: Int, if isWanted: () -> Bool = { true }) -> Bool? {
        trimQueue.sync {
            guard isWanted() else { return nil }
            var info = statvfs()
            guard statvfs(directoryPath, &info) == 0 else { return false }
            let free = Int(info.f_bavail) * Int(info.f_frsize)
            let needed = byteCount + Self.freeSpaceSlack - free
            guard needed > 0 else { return true }  // room was made meanwhile
            let total = totalByteCount
            guard total >= needed else { return false }
            // The budget's own trim, to a budget `needed` bytes under what the folder holds.
            trim(toBytes: total - needed)
            return knownUsage().map { $0 <= total - needed } ?? false
        }
    }

    /// The bytes this store believes the folder holds, counted from the folder the first time; `nil`
    /// when that count is needed and the folder cannot be listed now.
    private func knownUsage() -> Int? {
        if let known = usage.withLock({ $0.bytes }) { return known }
        guard let entries = listingForCount()?.entries else { return nil }
        return recordCount(entries.reduce(0) { $0 + $1.byteCount }, listed: entries)
    }

    /// Lists the folder to count it, on the disk queue; removals from here until ``recordCount(_:listed:snapshot:)``
    /// are noted.
    func listingForCount() -> (entries: [Entry], temporaries: [Entry])? {
        usage.withLock { $0.removedDuringListing = [] }
        return readListing()
    }

    /// Records `bytes`, the sizes of the files in `listed`, as what the folder holds, corrected for the
    /// names a removal took (or an attribute changed) since the listing began: each counts what its path
    /// holds now instead (a file another process wrote there since, or nothing). With `snapshot`, the
    /// listing's entries, that becomes the last listing in the same step, its entries for those names
    /// corrected alike: an attribute written meanwhile took the difference onto the snapshot this
    /// replaces, and commits make room from its sizes.
    @discardableResult
    func recordCount(
        _ bytes: Int, listed: [Entry], snapshot: (entries: [Entry], listedAt: DispatchTime)? = nil
    ) -> Int {
        usage.withLock { usage in
            var bytes = bytes
            var now: [String: Int?] = [:]
            if let removed = usage.removedDuringListing, !removed.isEmpty {
                for entry in listed where removed.contains(entry.name) { bytes -= entry.byteCount }
                for name in removed {
                    let size = Self.fileSize(atPath: directoryPath + name)
                    now[name] = size
                    bytes += size ?? 0
                }
            }
            usage.bytes = bytes
            usage.removedDuringListing = nil
            if let snapshot {
                // Under the lock that a main-thread size repair may wait for: walked only when a name changed.
                let entries =
                    now.isEmpty
                    ? snapshot.entries
                    : snapshot.entries.compactMap { entry -> Entry? in
                        guard let size = now[entry.name] else { return entry }
                        guard let size else { return nil }
                        var entry = entry
                        entry.byteCount = size
                        return entry
                    }
                folder.snapshot.withLock { $0 = (entries, snapshot.listedAt) }
            }
            return bytes
        }
    }

    /// The size of the regular file at `path` (a link is not followed), as ``entries()`` counts it.
    static func fileSize(atPath path: String) -> Int? {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? countedSize(of: info) : nil
    }

    /// What a file counts against the budget: the space it takes on disk (`st_blocks`, in 512-byte units:
    /// whole blocks, and the block its extended attributes take where the inode has no room for them),
    /// never less than its size (a file system that keeps small files inline, or compresses them).
    /// At most ``largestCountedSize``: a sparse file another program left in the folder may say any size up to
    /// Int64.max (tmpfs allows it), and two such sizes added up overflowed and ended the process.
    static func countedSize(of info: stat) -> Int {
        min(max(Int(info.st_size), Int(info.st_blocks) * 512), largestCountedSize)
    }

    /// The most one file counts, 2^48 bytes (256 TiB): far past any budget, so such a file is trimmed first,
    /// and 32,768 of them still add up without overflow.
    static let largestCountedSize = 1 << 48

    /// Whether a file takes more than its bytes' blocks and one more (the block ext4 gives attributes
    /// that do not fit in the inode): space reserved past its end, as XFS does for a growing file.
    static func holdsSpacePastItsEnd(_ info: stat) -> Bool {
        let block = max(Int(info.st_blksize), 512)
        let blocksOfBytes = (Int(info.st_size) + block - 1) / block * block
        return Int(info.st_blocks) * 512 > blocksOfBytes + block
    }

    /// Whether `path` is a regular file itself, not a link to one.
    static func isRegularFile(atPath path: String) -> Bool {
        fileSize(atPath: path) != nil
    }

    /// Creates `file` (it must not exist), locks it and writes `data` to it; returns the descriptor,
    /// which keeps the lock until it is closed, so that no store sharing the folder takes the file for
    /// an interrupted write's leftover (see ``lockState(atPath:)``). Throws a `POSIXError`, the file
    /// removed: never a partial temporary left behind.
    private func writeLocked(_ data: Data, to file: URL) throws -> Int32 {
        let path = file.path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // A file system without locks (some network mounts) still takes the write.
        _ = flock(descriptor, LOCK_EX | LOCK_NB)
        let failure: Int32? = data.withUnsafeBytes { buffer in
            var written = 0
            while written < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += count
            }
            return nil
        }
        guard let failure else { return descriptor }
        close(descriptor)
        unlink(path)
        throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
    }

    /// Removes `url`'s file (or a link in its place; never a folder and its contents), and drops the
    /// writes for `url` queued in the background before the call: they are neither read nor committed.
    func remove(_ url: URL) {
        let key = url.cacheKey
        // In one step with the unlink, as a write's rename asks: a write queued before lands before it or never.
        _ = removeCounted(named: Self.fileName(for: url)) { folder.staged.withLock { $0.dropQueued(forKey: key) } }
    }

    /// Removes `url`'s file only while it is the one a read found (`identity`), checked in one step with the
    /// unlink, as a commit renames: a file that a write of this process put in place since stays (one of
    /// another process, renamed in between the check and the unlink, can still go). Writes for `url` still
    /// queued stay too: they hold bytes other than the file's, which they are to replace. Whether it went.
    @discardableResult
    func remove(_ url: URL, readFrom identity: FileIdentity) -> Bool {
        let name = Self.fileName(for: url)
        let path = directoryPath + name
        return removeCounted(
            named: name,
            unless: {
                var status = stat()
                return lstat(path, &status) != 0 || FileIdentity(status) != identity
            })
    }

    /// Removes the file (or link) `name` and takes what it counted off the count, in one step with
    /// `first` and noting it for a count whose listing is in progress (see ``Usage``); whether it went.
    /// Nothing goes when `isDropped`, asked in that step, says so.
    func removeCounted(
        named name: String, first: () -> Void = {}, unless isDropped: () -> Bool = { false }
    ) -> Bool {
        let path = directoryPath + name
        return usage.withLock { usage in
            first()
            guard !isDropped() else { return false }
            let size = Self.fileSize(atPath: path) ?? 0
            guard unlink(path) == 0 else { return false }
            usage.bytes = usage.bytes.map { $0 - size }
            usage.removedDuringListing?.insert(name)
            return true
        }
    }

    /// Removes `url`'s file and runs `committed` in one step, as a ``store(_:pixelSize:metadata:for:generation:isCurrent:committed:isDropped:)``
    /// commits: unless a ``removeAll()`` has begun since `generation` was read (then neither happens,
    /// and it returns `false`).
    @discardableResult
    func remove(_ url: URL, generation: Int, then committed: () -> Void) -> Bool {
        trimQueue.sync {
            guard generation == self.generation else { return false }
            remove(url)
            committed()
            return true
        }
    }
}
