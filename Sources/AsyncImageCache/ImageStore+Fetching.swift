import Foundation

extension ImageStore {
    /// The original bytes for `url`: from memory, else one shared fetch from disk or the source, whose
    /// download waits for a connection at the highest `priority` of the runs that wait for it. A local
    /// file's fetch is shared only by the runs that found it at the same `fileVersion`. The fetch a run
    /// starts moves that run's `fetchSlot` along its redirects to other hosts.
    ///
    /// The bytes it returns are recorded in ``decodingOriginals`` for the caller, once, before it gets them:
    /// the caller drops that entry (`forgetDecoding`) once it has stored or let go of them. A fetch records
    /// its bytes there as it ends, for each run waiting for it, before the fetch leaves the table of fetches
    /// in flight: a load that takes the fetch over just after (``holdFetched(_:)``) finds them there, and
    /// does not fetch them again because the runs they were fetched for have not recorded them yet.
    ///
    /// A visible run that took no slot because it counted on a fetch in flight (`countsOnFetch`), which ended
    /// (cancelled, its loads gone) before the run joined it, takes one for the fetch it starts instead, held
    /// while that fetch goes on: otherwise it would fetch past its host's bound.
    func original(
        for url: URL, fileVersion: FileStamp?, priority: RunPriority, fetchSlot: FetchSlotHold? = nil,
        countsOnFetch: Bool = false
    ) async -> Result<FetchedOriginal, ImageLoadingError> {
        let generation = disk.generation
        let replacement = replacementCount(of: url)
        if let original = originals.value(forKey: url.cacheKey), isCurrent(original, for: url, at: fileVersion) {
            count { $0.originalMemoryHits += 1 }
            markDiskUse(of: url, original.diskUse)
            let metadata = revalidateIfStale(url)
            return .success(
                recordDecoding(
                    FetchedOriginal(
                        original, origin: .memory, generation: generation, replacement: replacement,
                        cacheMetadata: metadata), for: url))
        }
        if let decoding = sharedDecoding(of: url, generation: generation, replacement: replacement, at: fileVersion) {
            return .success(decoding)
        }
        if let held = heldDownload(of: url, generation: generation, replacement: replacement, at: fileVersion) {
            return .success(recordDecoding(held, for: url))
        }
        let key = RunKey(
            subject: url.cacheKey, generation: generation, replacement: replacement, fileVersion: fileVersion)
        // A run that joins a fetch in flight gives its slot back: the run that started the fetch holds one
        // for those bytes, and the fetch may wait for a slot where a redirect leads it (back to this host:
        // `A -> B -> A`). Held here while waiting for that fetch, the slot could be the one it waits for.
        // A fetch that ends with nobody waiting, only the hold of a load that took it over and has not joined
        // it yet (``holdFetched(_:)``), holds its download for that load, as a cancelled run's is held, and
        // lets the loads waiting for a fetch slot for these bytes go on without one.
        return await fetchRuns.value(
            for: key, priority: priority.current, following: priority, joinsRunning: fetchSlot?.giveBack,
            whenUnclaimed: { [self] fetched in
                // Only bytes held are there for the loads waiting for a slot: without them (bytes from disk,
                // older than a replacement, past the held downloads' budget) those loads fetch under a slot.
                if holdUndecoded(fetched, for: url) { fetchSlots.bytesArrived(for: url) }
            },
            whenFinished: { [self] fetched, waiters in
                // The fetch's own entry becomes one per waiter, in one step: the bytes are never missing
                // from the table between the fetch's leaving and its waiters' running.
                decodingOriginals.withLock { table in
                    let key = url.cacheKey
                    if let index = table[key]?.firstIndex(where: { $0 === fetched }) { table[key]?.remove(at: index) }
                    if waiters > 0 {
                        table[key, default: []].append(contentsOf: repeatElement(fetched, count: waiters))
                    }
                    if table[key]?.isEmpty == true { table[key] = nil }
                }
            }
        ) { [self] fetchPriority in
            // Its runs all left before its task got a thread: no disk read, no revalidation, for nobody.
            guard !Task.isCancelled else { return .failure(.cancelled) }
            // Held by a fetch that ended between the look above and this run's start, with nobody waiting:
            // it held them before it left the table, so a run started after it finds them here.
            if let held = heldDownload(of: url, generation: generation, replacement: replacement, at: fileVersion) {
                return .success(recordDecoding(held, for: url))
            }
            var ownSlot: FetchSlotHold?
            // Waited for at the fetch's priority, not the run's: the runs of other widths that joined the fetch
            // meanwhile wait for it too, and hold no slot of their own.
            if fetchSlot == nil, countsOnFetch, fetchPriority.current == .normal {
                switch await waitForFetchSlot(for: url, priority: fetchPriority) {
                case .slot(let hold): ownSlot = hold
                case .cancelled: return .failure(.cancelled)
                case .notNeeded:
                    // Bytes that arrived meanwhile (another width's fetch, or one held): else, gone again
                    // before this looks, they are fetched without a slot, as rarely.
                    if let held = heldDownload(
                        of: url, generation: generation, replacement: replacement, at: fileVersion)
                    {
                        return .success(recordDecoding(held, for: url))
                    }
                    if let decoding = sharedDecoding(
                        of: url, generation: generation, replacement: replacement, at: fileVersion)
                    {
                        return .success(decoding)
                    }
                }
            }
            let fetchSlot = fetchSlot ?? ownSlot
            // The fetch keeps the run's slot while it goes on for a visible run: the runs that joined it
            // hold none, and would fetch under none if this run were cancelled first.
            let downloading = fetchSlot?.keep(whileDownloadingAt: fetchPriority)
            defer { downloading?() }
            // One taken here is for this fetch only, so only the fetch keeps it: given back once no visible
            // run waits for the fetch (a prefetch's takes none), or as it ends; moved along its redirects.
            ownSlot?.giveBack()
            let outcome = await HTTPDataLoader.$runPriority.withValue(fetchPriority) {
                await HTTPDataLoader.$fetchSlot.withValue(fetchSlot) {
                    await fetchOriginal(url, generation: generation, replacement: replacement)
                }
            }
            // Recorded while the fetch is still in the table; `whenFinished` hands the entry to its waiters.
            return outcome.map { recordDecoding($0, for: url) }
        }
    }

    /// The bytes of `url` another run is decoding, when a run keyed by `generation`, `replacement` and
    /// `fileVersion` may decode them too: taken and recorded for the caller in one step, since the run decoding
    /// them may forget them in between.
    private func sharedDecoding(
        of url: URL, generation: Int, replacement: Int, at fileVersion: FileStamp?
    ) -> FetchedOriginal? {
        decodingOriginals.withLock { table -> FetchedOriginal? in
            guard let last = table[url.cacheKey]?.last, last.generation == generation,
                last.replacement == replacement, isCurrent(last.original, for: url, at: fileVersion)
            else { return nil }
            table[url.cacheKey]?.append(last)
            return last
        }
    }

    /// Records `fetched` in ``decodingOriginals`` for one run (or a fetch, until it ends), and returns it.
    private func recordDecoding(_ fetched: FetchedOriginal, for url: URL) -> FetchedOriginal {
        decodingOriginals.withLock { $0[url.cacheKey, default: []].append(fetched) }
        return fetched
    }

    /// The download of `url` held undecoded (``undecodedOriginals``) when a run keyed by `generation`,
    /// `replacement` and `fileVersion` may decode it; one it may not (older, or of another version) is let go.
    private func heldDownload(
        of url: URL, generation: Int, replacement: Int, at fileVersion: FileStamp?
    ) -> FetchedOriginal? {
        guard let held = undecodedOriginals.value(forKey: url.cacheKey) else { return nil }
        if held.generation == generation, held.replacement == replacement,
            isCurrent(held.original, for: url, at: fileVersion)
        {
            return held
        }
        undecodedOriginals.removeValue(forKey: url.cacheKey) { $0 === held }
        return nil
    }

    /// The key of a run for `subject` of `url` started now: under the disk tier's generation and `url`'s
    /// replacement count, read as ``original(for:fileVersion:priority:fetchSlot:countsOnFetch:)`` reads them
    /// before it looks anything up, and for a local file under `fileVersion`, the version the load found.
    func runKey<Subject>(_ subject: Subject, for url: URL, fileVersion: FileStamp? = nil) -> RunKey<Subject> {
        RunKey(
            subject: subject, generation: disk.generation, replacement: replacementCount(of: url),
            fileVersion: fileVersion)
    }

    /// Fetches `url`'s bytes from disk or the source for the run keyed by `generation` and `replacement`,
    /// the counts read before memory was looked up: what it fetches is tagged with them, so bytes read
    /// after a `removeAll()` or a replacement that memory missed are never kept as current.
    private func fetchOriginal(_ url: URL, generation: Int, replacement: Int) async -> Result<
        FetchedOriginal, ImageLoadingError
    > {
        // Bytes still waiting for the disk count as read from it (a `clearMemory()` has dropped them from memory).
        if url.isRemote, let entry = disk.stored(for: url) {
            if let header = try? ImageHeader.parse(entry.data) {
                count { $0.diskHits += 1 }
                // Repaired only while these bytes are current, and only on the file they came from: not
                // once a new image has replaced them, here or in another process.
                if let file = entry.identity, disk.pixelSize(for: url) != header.displaySize {
                    _ = ifCurrent(generation: generation, replacement: replacement, forKey: url.cacheKey) {
                        disk.setPixelSize(header.displaySize, for: url, readFrom: file)
                    }
                }
                // Shown with the facts that go with them; a stale entry is shown while it revalidates.
                let (metadata, digest) = cacheMetadata(forDiskRead: entry, of: url)
                revalidateIfStale(url)
                return .success(
                    FetchedOriginal(
                        OriginalImage(data: entry.data, header: header, fileStamp: nil), origin: .disk,
                        generation: generation, replacement: replacement, cacheMetadata: metadata,
                        bytesDigest: digest))
            }
            // Not an image any more: removed, as damaged bytes are, only as the file read (a write may have put
            // another in its place since), or as the write still waiting for the disk that they were; then
            // fall through to the source.
            if let file = entry.identity { disk.remove(url, readFrom: file) } else { disk.remove(url) }
        }
        guard !Task.isCancelled else { return .failure(.cancelled) }
        report(.fetch, url)
        let data: Data
        let policy: HTTPCachePolicy
        let stamp: FileStamp?
        switch await readFromSource(url, generation: generation) {
        case .success(let read): (data, policy, stamp) = read
        case .failure(let error): return .failure(error)
        }
        do {
            let header = try ImageHeader.parse(data)
            let original = OriginalImage(data: data, header: header, fileStamp: stamp)
            return .success(
                FetchedOriginal(
                    original, origin: .source, policy: url.isRemote ? policy : nil, generation: generation,
                    replacement: replacement))
        } catch {
            return .failure(.decodingFailed(error))
        }
    }

    /// Reads `url` from its source, with a local file's version as found just before the read.
    ///
    /// A local file is statted again after it is read: one that changed meanwhile (another program
    /// rewriting it in place) may have given bytes of two versions that still decode, so it is read
    /// again, up to ``localReadAttempts`` reads in all. A read that gives the same bytes as the one
    /// before it stands whatever the dates say (something touched the file), as does one of a file
    /// deleted since. A file that changed during each read fails with
    /// ``ImageLoadingError/fileUnavailable(path:reason:)``: its bytes are never delivered or kept.
    private func readFromSource(_ url: URL, generation: Int) async -> Result<
        (data: Data, policy: HTTPCachePolicy, stamp: FileStamp?), ImageLoadingError
    > {
        var attempt = 1
        var previous: Data?
        while true {
            let stamp = url.isFileURL ? fileStamp(of: url) : nil
            if url.isFileURL { forgetOtherVersions(of: url, than: stamp, generation: generation) }
            if let stamp, stamp.byteCount > Self.largeFileBytes, let error = Self.headerError(ofFileAt: url) {
                return .failure(.decodingFailed(error))
            }
            let data: Data
            let policy: HTTPCachePolicy
            do {
                guard
                    case .modified(let body, let responsePolicy) = try await configuration.dataLoader.loadData(
                        for: url, revalidating: nil)
                else {
                    return .failure(
                        .network(url: url, description: "not-modified answer to an unconditional request"))
                }
                (data, policy) = (body, responsePolicy)
            } catch {
                return .failure(error)
            }
            count {
                $0.sourceFetches += 1
                $0.bytesFetched += data.count
            }
            // A file gone since is not read again: the bytes came whole from the file that was there.
            if url.isLocalFileURL, !Task.isCancelled, let now = fileStamp(of: url), now != stamp, data != previous {
                guard attempt < Self.localReadAttempts else {
                    return .failure(
                        .fileUnavailable(
                            path: FileSystemPath.description(of: url),
                            reason: "changed while it was read, \(attempt) times in a row")
                    )
                }
                attempt += 1
                previous = data
                continue
            }
            return .success((data, policy, stamp))
        }
    }

    /// The most reads of a local file that keeps changing while it is read, within one fetch.
    static let localReadAttempts = 3

    /// Forgets what memory holds of versions of the local file `url` other than `stamp` (`nil`: the file is gone),
    /// as a load reads the file: its size (the memo does not say which version it came from), its original and its
    /// images at other widths. Otherwise a load that then fails (the file removed, or no longer an image) would
    /// leave the old file's size, bytes and images answering the synchronous lookups after it. Records `stamp` as
    /// the version last read, in the same step, so that loads still decoding another version keep nothing; after a
    /// `removeAll()` since `generation`, memory is already empty and this load keeps nothing either.
    private func forgetOtherVersions(of url: URL, than stamp: FileStamp?, generation: Int) {
        let key = url.cacheKey
        _ = disk.ifCurrent(generation) {
            recordVersion(stamp, forKey: key)
            sizeMemo.removeValue(forKey: key)
            if let original = originals.value(forKey: key), original.fileStamp != stamp {
                originals.removeValue(forKey: key)
            }
            variants.removeVariants(of: url) { $0.fileStamp != stamp }
        }
    }

    /// How many times `url`'s image has been replaced (see ``replacements``): read it before looking up the bytes.
    func replacementCount(of url: URL) -> Int {
        replacementCount(ofKey: url.cacheKey)
    }

    /// ``replacementCount(of:)`` by the URL's `cacheKey`.
    func replacementCount(ofKey key: String) -> Int {
        replacements.withLock { $0.count(ofKey: key) }
    }

    /// Runs `body`, which keeps something looked up for the URL whose `cacheKey` is `key`, when neither a
    /// `removeAll()` nor a revalidation's replacement of the image has happened since `generation` and
    /// `replacement` were read (before the lookup); `nil` without running it otherwise. Either of those
    /// waits until `body` returns, so what it keeps is in place before they empty memory, or never kept.
    func ifCurrent<Result>(
        generation: Int, replacement: Int, forKey key: String, _ body: () -> Result
    ) -> Result? {
        disk.ifCurrent(generation) { replacement == replacementCount(ofKey: key) ? body() : nil } ?? nil
    }

    /// Past this size a file is read whole only once its first bytes start an image.
    static let largeFileBytes = 16 << 20

    /// Why the file at `url` cannot be an image, from its first 16 KiB: a 3 GB file named `.jpg`
    /// that is not one is turned away without being read into memory. `nil` when those bytes start
    /// an image, or a header that runs past them.
    private static func headerError(ofFileAt url: URL) -> ImageDecodingError? {
        guard let path = try? FileSystemPath(url), let prefix = DiskStore.prefix(ofFileAt: path, maxLength: 16 * 1024)
        else { return nil }
        do {
            _ = try ImageHeader.parse(prefix)
            return nil
        } catch {
            return error.reason == .truncated ? nil : error
        }
    }

    /// Whether a memory original still matches its source: for a local file, whether it was read at
    /// `fileVersion`, the version the load found (same dates, size and identity).
    private func isCurrent(_ original: OriginalImage, for url: URL, at fileVersion: FileStamp?) -> Bool {
        guard url.isFileURL else { return true }
        return original.fileStamp != nil && original.fileStamp == fileVersion
    }

    /// The stamp of the local file `url` names; `nil` for a `file:` URL on another host
    /// (`file://server/...`), whose path names no file here, and for one whose path no file can have
    /// (a `%00` in it): neither statted nor read.
    func fileStamp(of url: URL) -> FileStamp? {
        guard url.isLocalFileURL, let path = try? FileSystemPath(url) else { return nil }
        return fileStamp(at: path)
    }

    /// The stamp of the local file at `path`, for a caller that has the path already.
    func fileStamp(at path: FileSystemPath) -> FileStamp? {
        configuration.fileInspector.stamp(ofFileAt: path)
    }
}
