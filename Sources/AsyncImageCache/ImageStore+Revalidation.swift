import Foundation

/// HTTP freshness: remote entries remember what their response said about caching, a stale entry
/// is served at once and revalidated in the background, a `304` refreshes it without touching its
/// bytes, and changed bytes replace the old image in both tiers.
extension ImageStore {
    /// Keeps `metadata`, the caching facts of a remote original (a download's, or a `304`'s refreshed ones),
    /// in memory and writes the original to disk with them as they allow (a `no-store` one removes its
    /// file); not when a `removeAll()` ran after `generation` was read, nor, with `replacement` (the count
    /// read before the bytes were looked up), over an image a revalidation has put in their place since.
    ///
    /// `replacing`, for a revalidation's new image, puts it in memory in one step with the disk change:
    /// once the file holds the new bytes, or holds nothing where they could not be written or may not
    /// be stored. A lookup that reads the count it raises finds no older bytes on disk, unless the folder
    /// refuses even the removal of the old file (read-only): then they are found, as before. Returns
    /// whether it ran.
    ///
    /// `inBackground` (a load's write) queues the file's write and returns at once: the load's delivery
    /// never waits for the disk queue. Its commit checks the generation and the count when it runs, as
    /// any other does; memory serves the bytes meanwhile, and the disk tier's reads find them queued.
    /// While the writes already waiting hold the folder's limit (``DiskStore/backgroundWriteByteLimit``),
    /// it writes at once, as without it.
    @discardableResult
    func keepRemote(
        _ original: OriginalImage, metadata: HTTPCacheMetadata, for url: URL, generation: Int,
        replacement: Int? = nil, inBackground: Bool = false, replacing: (() -> Void)? = nil
    ) -> Bool {
        let key = url.cacheKey
        // The counts, not the store: a write queued in the background does not keep the store alive, and
        // once it is gone another store on the folder may still replace the image (they share the counts).
        let isCurrent: @Sendable () -> Bool = { [replacements] in
            guard let replacement else { return true }
            return replacement == replacements.withLock { $0.count(ofKey: key) }
        }
        // Nor the caching facts, for an image a `removeAll()` has dropped (the write below would be refused).
        guard isCurrent(), generation == disk.generation else { return false }
        // A new image's facts go into memory with it, in the step that puts it there: a write dropped at its
        // commit (another store on the folder removed or replaced the image since) leaves the facts of the
        // images memory still shows, which the next check asks about. (Kept before, they stayed beside the old
        // images, and every check, made with the new image's validators, was answered 304.)
        let replacing = replacing.map { replacing in
            { [self] in
                keepInMemory(metadata, forKey: key)
                replacing()
            }
        }
        if replacing == nil { keepInMemory(metadata, forKey: key) }
        // Past the bytes the folder lets wait for the disk, written below on this thread instead.
        if metadata.isStorable, inBackground, replacing == nil,
            disk.storeInBackground(
                original.data, pixelSize: original.pixelSize, metadata: metadata, for: url, generation: generation,
                isCurrent: isCurrent)
        {
            return true
        }
        if metadata.isStorable {
            do {
                // Returning, it has committed the file, and `replacing` has run.
                try disk.store(
                    original.data, pixelSize: original.pixelSize, metadata: metadata, for: url, generation: generation,
                    isCurrent: isCurrent
                ) { replacing?() }
                return true
            } catch {
                // A full or read-only disk costs the next launch a download, never this load; a new
                // image that cannot be written takes the old file away with it.
                guard let replacing, (error as? POSIXError)?.code != .ECANCELED else { return false }
                return disk.remove(url, generation: generation) { if isCurrent() { replacing() } }
            }
        } else {
            // No-store: not even an older copy stays.
            guard let replacing else {
                disk.remove(url)
                return true
            }
            return disk.remove(url, generation: generation) { if isCurrent() { replacing() } }
        }
    }

    /// Records new caching facts for `url`'s entry, in memory and on its file, leaving its bytes as they are.
    /// `checked`, the facts the check that gave them began with, says which response they are about: a file
    /// that holds another one by now (another store or process wrote it since) keeps its own.
    private func refresh(_ metadata: HTTPCacheMetadata, for url: URL, checked: HTTPCacheMetadata) {
        keepInMemory(metadata, forKey: url.cacheKey)
        disk.setCacheMetadata(metadata, for: url, over: checked)
    }

    /// Whether the caching facts memory holds for `url` are still about the response a check that began with
    /// `checked` asks about: none (let go of), those very facts, or others of the same response. Not facts read
    /// with another response's bytes (another store or process wrote the file), which await a check of their
    /// own, nor facts whose validators name another response (a load kept other bytes meanwhile): a `304` to
    /// the check is not about the images memory shows with them, and put beside those images, its validators
    /// would have every later check answered 304 for the other response, and those images shown for good.
    private func factsInMemory(of url: URL, areAbout checked: HTTPCacheMetadata) -> Bool {
        guard let current = cacheMetadata.value(forKey: url.cacheKey), current != checked else { return true }
        return !current.awaitsCheck && !current.namesAnotherResponse(than: checked)
    }

    /// Keeps `metadata` in memory as the caching facts of the entry with cache key `key`, costing what
    /// it takes.
    private func keepInMemory(_ metadata: HTTPCacheMetadata, forKey key: String) {
        cacheMetadata.insert(metadata, forKey: key, cost: metadata.memoryCost(forKey: key))
    }

    /// The caching facts of a remote entry: from memory, else from its disk file's attribute. Without
    /// either, fresh when it has a file, else stale.
    func storedCacheMetadata(for url: URL) -> HTTPCacheMetadata? {
        let key = url.cacheKey
        if let metadata = cacheMetadata.value(forKey: key) { return metadata }
        // An entry without the attribute (written where attributes fail, or by an older build) is
        // remembered as fresh, so the disk is asked once per URL, not at every load. Bytes in memory
        // without a file (no-store, or a file trimmed or never written) whose facts memory has let go
        // of are remembered as stale, with no validators: the next load that shows them asks the
        // server for the image, whose answer records facts again. Taken for fresh, they never would be.
        // Made the same by every look-up (two loads may miss at once, and the one whose check runs keeps
        // its own): a failed check records its retry delay only over the facts it started with.
        let metadata = disk.cacheMetadata(for: url) ?? factsOfAnEntryWithout(url)
        keepInMemory(metadata, forKey: key)
        return metadata
    }

    /// The facts ``storedCacheMetadata(for:)`` gives an entry that has none: fresh while it has a file, else stale.
    private func factsOfAnEntryWithout(_ url: URL) -> HTTPCacheMetadata {
        HTTPCacheMetadata(
            policy: HTTPCachePolicy(maxAge: disk.contains(url) ? nil : 0), receivedAt: Date(timeIntervalSince1970: 0))
    }

    /// The caching facts to show `entry`'s bytes with, just read from the disk tier for `url`, kept in memory:
    /// those memory holds, else those read with the bytes (or, with none, as ``storedCacheMetadata(for:)``
    /// makes them).
    ///
    /// The bytes may be of another response than memory's facts and images: another store or process on the
    /// folder wrote the file after this store kept them, from a download that may be newer than theirs, or
    /// older (a slow one lands over a newer file). Which, nothing tells. Then the facts read with the bytes go
    /// with them, stale until checked (``HTTPCacheMetadata/awaitsCheck``), and the images of other bytes go:
    /// the check asks about these very bytes, and replaces them when the server has moved on. (Under memory's
    /// facts, it would be answered 304 for the other response, and these bytes shown for good.) Told by the
    /// images in memory, whose bytes' digest differs, or without any by the facts, whose validators differ
    /// (``HTTPCacheMetadata/namesAnotherResponse(than:)``).
    ///
    /// Returns the facts, and the bytes' digest (``PreparedImage/digest(of:)``) when it was made to compare them
    /// with the images in memory, for a decode of them to reuse.
    func cacheMetadata(forDiskRead entry: DiskStore.StoredEntry, of url: URL) -> (
        facts: HTTPCacheMetadata, bytesDigest: Int?
    ) {
        let key = url.cacheKey
        let inMemory = cacheMetadata.value(forKey: key)
        var metadata = entry.metadata ?? factsOfAnEntryWithout(url)
        var digest: Int?
        if let shown = variants.sourceDigest(of: url) {
            let read = PreparedImage.digest(of: entry.data)
            digest = read
            guard shown != read else { return (inMemory ?? keptInMemory(metadata, forKey: key), digest) }
            variants.removeVariants(of: url) { $0.sourceDigest.map { $0 != read } ?? false }
        } else if let inMemory {
            guard metadata.namesAnotherResponse(than: inMemory) else { return (inMemory, nil) }
        } else {
            return (keptInMemory(metadata, forKey: key), nil)
        }
        metadata.awaitsCheck = true
        return (keptInMemory(metadata, forKey: key), digest)
    }

    /// Keeps `metadata` in memory (``keepInMemory(_:forKey:)``) and returns it.
    private func keptInMemory(_ metadata: HTTPCacheMetadata, forKey key: String) -> HTTPCacheMetadata {
        keepInMemory(metadata, forKey: key)
        return metadata
    }

    /// Starts a background revalidation of `url` when its entry is stale; one at a time per URL, at most
    /// ``revalidationLimit`` of its host and ``revalidationTotalLimit`` in all at once in the store, and
    /// after a failed one not before its retry delay (see ``HTTPCacheMetadata/afterFailedRevalidation(at:)``).
    /// A stale entry shown while a limit is reached is served as it is, and checked at a later load that
    /// shows it.
    /// Called from a cancelled task (a load cancelled before it started, a run whose loads have all left), it
    /// starts nothing: that image is shown to nobody, and the next load that shows it asks.
    /// Returns the entry's caching facts (``storedCacheMetadata(for:)``), `nil` for a URL that is not remote.
    @discardableResult
    func revalidateIfStale(_ url: URL) -> HTTPCacheMetadata? {
        guard url.isRemote, let metadata = storedCacheMetadata(for: url) else { return nil }
        guard metadata.needsRevalidation(), !Task.isCancelled else { return metadata }
        let key = url.cacheKey
        let host = HTTPTaskTable.host(of: url)
        let isNew = revalidating.withLock {
            $0.insert(key, host: host, hostLimit: Self.revalidationLimit, limit: Self.revalidationTotalLimit)
        }
        guard isNew else { return metadata }
        Task(priority: .utility) { [self] in
            // A background check, even when a visible load's fetch started it (task-locals are inherited).
            await HTTPDataLoader.$runPriority.withValue(nil) {
                await HTTPDataLoader.$fetchSlot.withValue(nil) { await revalidate(url, metadata: metadata) }
            }
            revalidating.withLock { $0.remove(key) }
        }
        return metadata
    }

    /// Puts `metadata`, the caching facts looked up (or downloaded) with bytes that are now being kept in
    /// memory, back in memory when a `clearMemory()` has emptied them since, or before a download's write
    /// records them: bytes kept without them would be found stale once their disk file is gone (trimmed,
    /// purged) or before it is written, and asked for again. Newer facts (a `304` since) stay. Call it in
    /// the same step that keeps the bytes.
    func restoreCacheMetadata(_ metadata: HTTPCacheMetadata?, for url: URL) {
        guard let metadata, !cacheMetadata.contains(url.cacheKey) else { return }
        keepInMemory(metadata, forKey: url.cacheKey)
    }

    /// Puts the caching facts of `fetched` in memory as its bytes and their picture are kept there: in the step
    /// that keeps them, where memory has none (``restoreCacheMetadata(_:for:)``), and in place of facts there
    /// about another response. Those came in while the bytes decoded: read from a file that another store or
    /// process wrote meanwhile, or with a download. Memory keeps the bytes that arrive last, and their picture
    /// replaces the other response's; under its facts, each check would ask about that other response, be
    /// answered 304, and leave this picture shown for good. Bytes taken from the disk tier or from memory then
    /// await a check (``HTTPCacheMetadata/awaitsCheck``): the file was rewritten after they were looked up, by a
    /// download newer or older than theirs, which nothing tells. A download's facts are the server's own.
    ///
    /// Another response is told by the bytes memory holds, where it holds any: its original's, else those its
    /// pictures were decoded from. Facts that came in since with the same bytes are theirs, whatever validators
    /// they bring (a check answered 200 with these very bytes, under the validators of a file the server touched):
    /// they stay. Other bytes are another response even when neither response's facts have validators. Without
    /// bytes in memory, the facts' validators tell (``HTTPCacheMetadata/namesAnotherResponse(than:)``).
    ///
    /// Returns whether memory held another response.
    func keepCacheMetadata(of fetched: FetchedOriginal, for url: URL) -> Bool {
        let key = url.cacheKey
        guard
            var facts = fetched.cacheMetadata
                ?? fetched.policy.map({ HTTPCacheMetadata(policy: $0, receivedAt: fetched.receivedAt) })
        else { return false }
        let inMemory = cacheMetadata.value(forKey: key)
        let isAnother: Bool
        if let original = originals.value(forKey: key) {
            // The very bytes (another width kept them, or they came from memory) are not compared again.
            isAnother = original.diskUse !== fetched.original.diskUse && original.data != fetched.original.data
        } else if let shown = variants.sourceDigest(of: url) {
            isAnother = shown != fetched.bytesDigest
        } else {
            isAnother = inMemory.map { facts.namesAnotherResponse(than: $0) } ?? false
        }
        guard isAnother || inMemory == nil else { return false }
        if isAnother, fetched.origin != .source { facts.awaitsCheck = true }
        keepInMemory(facts, forKey: key)
        return isAnother
    }

    /// Asks the source whether `url` changed. Failures keep the stale entry: an error page or a
    /// network fault never replaces a good image, and the next attempt waits (in memory only: a
    /// relaunch asks again).
    func revalidate(_ url: URL, metadata: HTTPCacheMetadata) async {
        guard let generation = await revalidationOutcome(url, metadata: metadata) else { return }
        // Not after a `removeAll()`, and not over what a load or another check has stored since.
        disk.ifCurrent(generation) {
            guard cacheMetadata.value(forKey: url.cacheKey) == metadata else { return }
            keepInMemory(metadata.afterFailedRevalidation(), forKey: url.cacheKey)
        }
    }

    /// The revalidation itself; the disk generation it started at when it failed, `nil` otherwise
    /// (refreshed, replaced, or the entry removed meanwhile).
    private func revalidationOutcome(_ url: URL, metadata: HTTPCacheMetadata) async -> Int? {
        report(.fetch, url)
        count { $0.revalidations += 1 }
        let generation = disk.generation
        // Raised by `removeImage(for:)` meanwhile, the entry is forgotten: this answer keeps nothing.
        let replacement = replacementCount(of: url)
        let validators = metadata.validators.hasValidators ? metadata.validators : nil
        guard var result = try? await configuration.dataLoader.loadData(for: url, revalidating: validators) else {
            return generation
        }
        // A 304 with another entity tag names a response other than the one stored, and must not update it
        // (RFC 9111 4.3.4): the bytes the server now has are fetched whole, at once. Without them (a failure,
        // or a 304 again), the stored facts stay as they were, stale, and the next check waits its delay.
        if case .notModified(let policy) = result, !metadata.isUpdated(by: policy) {
            guard let whole = try? await configuration.dataLoader.loadData(for: url, revalidating: nil),
                case .modified = whole
            else { return generation }
            result = whole
        }
        // A load's write of the entry, queued in the background, lands first: the answer applies to the
        // file it leaves (a no-store `304` removes it, a refresh dates it), never to a folder it then overwrites.
        await disk.queuedWrites()
        // Freshness runs from the response, however long the check decode below waits for a slot.
        let receivedAt = Date()
        // A `removeAll()` meanwhile removed the entry: nothing is left to refresh or replace. One of another
        // store on the folder emptied only that store's memory: this one's still holds the image, which
        // bytes that changed (and read as an image) show to be out of date, so it forgets it, and the next
        // load asks again. (The changed bytes are not kept: they were asked for before that removeAll().)
        guard generation == disk.generation else {
            if case .modified(let data, _) = result, data != originals.value(forKey: url.cacheKey)?.data,
                (try? ImageHeader.parse(data)) != nil
            {
                while !forgetInMemory(url, generation: disk.generation) {}
            }
            return nil
        }
        switch result {
        case .notModified(let policy):
            let refreshed = metadata.refreshed(by: policy, at: receivedAt)
            let applied = ifCurrent(generation: generation, replacement: replacement, forKey: url.cacheKey) {
                () -> Bool in
                // Not over facts of another response that memory took meanwhile: the next check asks about them.
                guard factsInMemory(of: url, areAbout: metadata) else { return false }
                if refreshed.isStorable {
                    refresh(refreshed, for: url, checked: metadata)
                } else {
                    // No-store now, or still (a 304 without Cache-Control keeps it): the file goes, as with
                    // the same bytes again; memory keeps the image.
                    keepInMemory(refreshed, forKey: url.cacheKey)
                    disk.remove(url)
                }
                return true
            }
            // A no-store entry that may be stored now has no file: the bytes memory holds are written with
            // the new facts, as a 200 saying so would have been (not over an image that replaced them since).
            if applied == true, refreshed.isStorable, !metadata.isStorable,
                let original = originals.value(forKey: url.cacheKey)
            {
                keepRemote(original, metadata: refreshed, for: url, generation: generation, replacement: replacement)
            }
            count { $0.notModified += 1 }
            return nil
        case .modified(let data, let policy):
            count {
                $0.sourceFetches += 1
                $0.bytesFetched += data.count
            }
            guard let header = try? ImageHeader.parse(data) else { return generation }
            let original = OriginalImage(data: data, header: header, fileStamp: nil)
            // A server that cannot validate sends the whole image again. The same bytes leave the
            // entry as it is, decodes included, with the new response's freshness; a file already
            // there keeps its bytes, and otherwise the file follows the new response's storability,
            // as changed bytes would (written after an earlier no-store, removed by a no-store).
            // The same bytes as the ones shown: the original's in memory, else those the images in memory were
            // decoded from (all of one response: their digest), else the file's, but only while it has the
            // caching facts the check began with: another store on the folder may have put another response
            // there since (its own check, or a load after a removal), new to a decode of this store's in flight.
            // With an original in memory, the pictures' bytes too, where they are others: `cachedOriginalBytes(for:)`
            // keeps a file it read in a step of its own, after a late decode of other bytes may have kept its picture.
            let shownDigest = variants.sourceDigest(of: url)
            let isSame: Bool
            if let inMemory = originals.value(forKey: url.cacheKey) {
                isSame = data == inMemory.data && shownDigest.map { $0 == PreparedImage.digest(of: data) } ?? true
            } else if let shownDigest {
                isSame = PreparedImage.digest(of: data) == shownDigest
            } else {
                isSame =
                    disk.stored(for: url).map { $0.metadata?.encoded == metadata.encoded && $0.data == data } ?? false
            }
            if isSame {
                if policy.isStorable, disk.contains(url) {
                    refresh(HTTPCacheMetadata(policy: policy, receivedAt: receivedAt), for: url, checked: metadata)
                } else {
                    keepRemote(
                        original, metadata: HTTPCacheMetadata(policy: policy, receivedAt: receivedAt), for: url,
                        generation: generation, replacement: replacement)
                }
                count { $0.notModified += 1 }
                return nil
            }
            // Decoded once at a token size first: bytes that do not decode are not kept.
            let smallest = PixelSize(width: 1, height: 1)
            let check = await decodeSlots.run(priority: RunPriority(.low)) { [self, configuration] in
                count { $0.decodes += 1 }
                return
                    (try? configuration.decoder.decode(
                        data,
                        context: ImageDecodingContext(
                            header: header, minimumSize: smallest, pixelBudget: configuration.pixelBudget))) != nil
            }
            guard check == true else { return generation }
            // Kept in memory, and the count raised, in one step with the file's change: a lookup that
            // reads the raised count finds the new bytes or none on disk, never the old ones. A decode of
            // the old bytes still running (another width) sees the count raised, and keeps nothing after.
            // Under the generation's lock too, as a load keeps its result: no lookup keeps anything old
            // between the new original going in and the count going up.
            keepRemote(
                original, metadata: HTTPCacheMetadata(policy: policy, receivedAt: receivedAt), for: url,
                generation: generation, replacement: replacement
            ) { [self] in
                _ = disk.ifCurrent(generation) {
                    keepOriginal(original, forKey: url.cacheKey)
                    memoize(original.pixelSize, forKey: url.cacheKey)
                    variants.removeVariants(of: url)
                    replacements.withLock { $0.raise(forKey: url.cacheKey) }
                }
            }
            return nil
        }
    }
}

/// The background revalidations a store runs now, by URL (`cacheKey`), counted per host
/// (``HTTPTaskTable/host(of:)``).
struct Revalidations {
    /// The host each revalidation asks, by URL.
    private var hosts: [String: String] = [:]
    /// The revalidations of each host that has any.
    private var perHost: [String: Int] = [:]

    var count: Int { hosts.count }
    var isEmpty: Bool { hosts.isEmpty }

    /// Records a revalidation of `key`, which asks `host`, unless one of `key` runs already, or `host` has
    /// `hostLimit` running, or `limit` run in all; returns whether it did.
    mutating func insert(_ key: String, host: String, hostLimit: Int, limit: Int) -> Bool {
        guard hosts.count < limit, hosts[key] == nil, perHost[host, default: 0] < hostLimit else { return false }
        hosts[key] = host
        perHost[host, default: 0] += 1
        return true
    }

    /// Forgets the revalidation of `key`, which has ended.
    mutating func remove(_ key: String) {
        guard let host = hosts.removeValue(forKey: key), let running = perHost[host] else { return }
        perHost[host] = running > 1 ? running - 1 : nil
    }
}
