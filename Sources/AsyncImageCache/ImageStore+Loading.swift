import Foundation

/// A load started with ``ImageStore/load(_:completion:)``, which you can cancel.
public final class ImageLoadTask: Sendable {
    private let task: Task<Void, Never>

    /// Returns once the load has ended and its completion has run (with `nil` for a cancelled load).
    /// For the tests, which wait for a load they cannot see from outside to land.
    func ended() async {
        await task.value
    }

    init(_ task: Task<Void, Never>) {
        self.task = task
    }

    /// Stops waiting for the image. The completion handler still runs once, with `nil`, unless it
    /// already ran: cancel on the main thread (as when a cell is reused) and it cannot deliver the
    /// image afterwards. That `nil` comes when the load has noticed the cancellation, which may be after
    /// the completion of a load started since: a cell reused for another URL should clear its image when
    /// it starts the new load, not when a completion brings `nil`. Unless another load is waiting for the same image, the download stops, a
    /// decode not yet started never starts, and a decode already running stops within a few rows where
    /// the decoder works row by row (JPEG, PNG and GIF on Linux), or within a chunk of the file for
    /// WebP on Linux, keeping no image; the original bytes stay cached where they already were, and
    /// bytes just downloaded are held for the next load.
    public func cancel() {
        task.cancel()
    }
}

extension ImageStore {
    /// Loads the image for `request` and calls `completion` once, on the main thread, with the
    /// image or with `nil` when the load failed or was cancelled.
    ///
    /// Concurrent loads of the same request share one fetch and one decode; loads of the same URL
    /// at different widths share one fetch. A load of a local file that changed since a load of it
    /// began shares neither: it reads the file again. One whose file is saved over while it decodes
    /// reads and decodes it again, once, and brings the new version. For the reason of a failure use
    /// ``image(for:)``.
    ///
    /// The image may be wider than `request` asks for: a larger decode already in memory that looks
    /// the same at this width serves it, as for ``cachedImage(for:)``. Draw it scaled to the frame.
    ///
    /// The load starts once the main actor is free, then fetches and decodes off it: a load started
    /// and cancelled in the same turn of the main actor, as rows flung past in one frame are, fetches
    /// and decodes nothing.
    ///
    /// On Linux the completion runs through the main actor: the main run loop must be running
    /// (`RunLoop.main.run()`) for it to run on the main thread.
    ///
    /// - Returns: A task that cancels the load; ignoring it is fine.
    @discardableResult
    public func load(
        _ request: ImageRequest, completion: @escaping @MainActor (PlatformImage?) -> Void
    ) -> ImageLoadTask {
        load(request, replacing: nil, completion: completion)
    }

    /// ``load(_:completion:)`` that also cancels `replaced`, once this load has started, while holding
    /// the URL's fetch and the run of this very request: a load of the same URL replaced by a wider one
    /// hands its download over instead of stopping it and starting it again, and one replaced by a load
    /// of the same request (a model made for another display scale whose width is capped the same) hands
    /// over its decode too.
    func load(
        _ request: ImageRequest, replacing replaced: ImageLoadTask?,
        completion: @escaping @MainActor (PlatformImage?) -> Void
    ) -> ImageLoadTask {
        let task = Task { @MainActor [self] in
            let release = replaced == nil ? nil : holdFetched(request)
            replaced?.cancel()
            let image = try? await prepared(request).get().image
            release?()
            // Cancelled (on the main actor, as a reused cell does) before this ran: `nil`, even for an
            // image in memory, so that it never lands in a view that has moved on to another URL.
            completion(Task.isCancelled ? nil : image?.value)
        }
        return ImageLoadTask(task)
    }

    /// Loads the image for `request`. As with ``load(_:completion:)``, it may be wider than asked for
    /// when a larger decode that looks the same is already in memory.
    ///
    /// Cancelling the calling task stops waiting at once and, when no other load waits for them,
    /// stops the download, keeps a decode not yet started from starting, and stops a decode already
    /// running as ``ImageLoadTask/cancel()`` says.
    ///
    /// - Throws: ``ImageLoadingError`` saying what failed; ``ImageLoadingError/cancelled`` when the
    ///   task was cancelled.
    public func image(for request: ImageRequest) async throws(ImageLoadingError) -> PlatformImage {
        try await prepared(request).get().image.value
    }

    /// The image for `request`, from memory or from a run of the pipeline.
    ///
    /// A run of a local file is shared by the loads that found the file at the version it began with, and
    /// may move on to another version (the file changed as it was read or decoded). A load that finds no
    /// file shares nothing. A load that joined a run after it moved on, finding the file back at the first
    /// version, would deliver a picture the file held at no time during the load. Stamps seldom allow it
    /// (a file's status change time only grows, and a symbolic link pointed back is a new link), but a
    /// folder of the path that is a link pointed elsewhere and back does: a load whose run brings another
    /// version than it found, while the file is at the one it found, loads again, once (`isSecondLook`).
    /// One that finds the file at a third version delivers the run's: the file held that after the load
    /// began, and a file that keeps changing (its dates touched at each read) would otherwise be read and
    /// decoded twice in every load.
    func prepared(
        _ request: ImageRequest, priority: ImageLoadPriority = .normal, isSecondLook: Bool = false
    ) async -> Result<PreparedImage, ImageLoadingError> {
        let hit = variants.value(for: request)
        // A local file may have changed since it was decoded, or since a load in flight read it: one
        // stat, here off the caller's thread (``cachedImage(for:)`` never looks).
        let version = request.url.isFileURL ? fileStamp(of: request.url) : nil
        if let hit {
            if !request.url.isFileURL || hit.fileStamp == version {
                count { $0.variantHits += 1 }
                markDiskUse(of: request.url, hit.diskUse)
                // Not for a load cancelled before it started (a row flung past): `revalidateIfStale` asks
                // the server nothing from a cancelled task; the next load that shows the image revalidates it.
                revalidateIfStale(request.url)
                return .success(hit)
            }
            variants.removeVariants(of: request.url)
        }
        // A load that finds no file shares nothing: a run or fetch begun when the file was missing too may
        // have read it meanwhile, while it was there, before this load began.
        let runVersion = version ?? (request.url.isLocalFileURL ? FileStamp.unshared() : nil)
        let key = runKey(request, for: request.url, fileVersion: runVersion)
        let outcome = await variantRuns.value(for: key, priority: priority) { [self] priority in
            // Its loads all left before its task got a thread (cores busy decoding while rows fly past).
            guard !Task.isCancelled else { return .failure(.cancelled) }
            // A visible run fetches once one of the few ``fetchSlots`` is free, and gives it back as it
            // gets a decode slot (or ends); a prefetch's run is bounded by ``prefetchConcurrency`` (per source), and one
            // whose bytes are in memory already, or on the way (a fetch in flight it joins), fetches nothing,
            // so it does not wait behind the fetches; nor does one whose bytes arrive while it waits (another
            // width's fetch, or a prefetch's). The slot moves with a download that a redirect leads to another
            // host (``FetchSlotHold``).
            var fetchSlot: FetchSlotHold?
            // Counting on a fetch in flight, the run takes a slot only should it have to start one itself.
            var countsOnFetch = false
            if priority.current == .normal, !holdsOriginal(of: request.url) {
                if isFetching(request.url, under: key) {
                    countsOnFetch = true
                } else {
                    switch await waitForFetchSlot(for: request.url, priority: priority) {
                    case .slot(let hold): fetchSlot = hold
                    case .notNeeded: break
                    case .cancelled: return .failure(.cancelled)
                    }
                }
            }
            if priority.current == .normal { await configuration.fetchSlotObserver?(request.url, fetchSlot != nil) }
            // Once only prefetches want the run (its visible loads left), it is bounded as a prefetch and
            // gives the slot back: holding it, it would keep the host's next visible load from fetching
            // while it waits for a decode slot behind the visible loads. Weakly: the hold keeps the
            // priority, which keeps this handler.
            if let fetchSlot { priority.whenLowered { [weak fetchSlot] in fetchSlot?.giveBack() } }
            defer { fetchSlot?.giveBack() }
            return await prepare(
                request, fileVersion: runVersion, priority: priority, fetchSlot: fetchSlot,
                countsOnFetch: countsOnFetch)
        }
        if !isSecondLook, case .success(let image) = outcome, request.url.isLocalFileURL,
            image.fileStamp != version, !Task.isCancelled, fileStamp(of: request.url) == version
        {
            return await prepared(request, priority: priority, isSecondLook: true)
        }
        if case .failure(let error) = outcome, error != .cancelled { count { $0.failures += 1 } }
        // The run may have been started by a load that wrote the URL another way (`HTTP://`).
        return outcome.mapError { $0.naming(request.url) }
    }

    /// One run of the pipeline for `request`, shared by every waiter for it; for a local file, by those
    /// that found it at `fileVersion`.
    ///
    /// A file of the disk tier was stored only after it decoded, so cached bytes that now fail as
    /// damaged (cut short, corrupt, unrecognisable) were damaged on disk: they leave both tiers and,
    /// once, the image is fetched afresh from the source within the same load (`isSecondTry`).
    ///
    /// A local file that fails to read or decode after it changed under the load (read while another
    /// program rewrote it in place: cut short, empty, or gone for a moment), or that was saved over
    /// while its bytes decoded, is read again, once, at its new version within the same load.
    ///
    /// `fetchSlot` is the run's slot of ``fetchSlots``, which its download's redirects move: the run gives
    /// it back as it gets a decode slot, so that another load may start fetching. A second try after a
    /// decode that failed fetches without one, once per run at most. A run that took none, `countsOnFetch`
    /// (a fetch of its URL was in flight), takes one should that fetch end before the run joins it.
    private func prepare(
        _ request: ImageRequest, fileVersion: FileStamp?, priority: RunPriority,
        fetchSlot: FetchSlotHold? = nil, countsOnFetch: Bool = false, isSecondTry: Bool = false,
        decodedBefore: (data: Data, bitmap: Bitmap)? = nil
    ) async -> Result<PreparedImage, ImageLoadingError> {
        let fetched: FetchedOriginal
        switch await original(
            for: request.url, fileVersion: fileVersion, priority: priority, fetchSlot: fetchSlot,
            countsOnFetch: countsOnFetch)
        {
        case .success(let value):
            fetched = value
            await configuration.fetchedObserver?(request.url)
        case .failure(let error):
            if error != .cancelled, !isSecondTry, let changed = changedVersion(of: request.url, since: fileVersion) {
                return await prepare(
                    request, fileVersion: changed, priority: priority, fetchSlot: fetchSlot, isSecondTry: true)
            }
            return .failure(error)
        }
        // Until it is stored (or dropped), another width of the URL shares these bytes: `original(for:)` has
        // recorded them for this run.
        defer { forgetDecoding(fetched, for: request.url) }
        // Loads of other widths waiting for a fetch slot take them now, instead of fetching them again.
        fetchSlots.bytesArrived(for: request.url)
        // Waits for a decode slot, then lets another load start fetching; a run cancelled meanwhile never
        // decodes, and one cancelled while it decodes stops at the decoder's next check.
        let cancellation = DecodeCancellation(rowObserver: configuration.decodeRowObserver)
        let rendered: Result<Bitmap, ImageDecodingError>?
        if let decodedBefore, decodedBefore.data == fetched.original.data {
            // The file's dates changed while its bytes decoded, not the bytes (touched, or given an attribute).
            rendered = .success(decodedBefore.bitmap)
        } else {
            rendered = await decodeSlots.run(priority: priority, cancellation: cancellation) {
                [self] () -> Result<Bitmap, ImageDecodingError> in
                fetchSlot?.giveBack()
                return Result { () throws(ImageDecodingError) in
                    // Only a visible load spends other cores to finish sooner; a prefetch has nobody waiting.
                    try render(
                        fetched.original, for: request, cancellation: cancellation,
                        mayUseOtherCores: priority.current == .normal)
                }
            }
        }
        let bitmap: Bitmap
        switch rendered {
        case nil:
            // Cancelled before it got a slot: a download is held all the same.
            holdUndecoded(fetched, for: request.url)
            return .failure(.cancelled)
        case .failure(let error)? where error.reason == .cancelled || cancellation.isCancelled:
            // Stopped because nobody wants it (a decoder may fail in its own way once told to stop):
            // the bytes are as good as before, so they stay where they are, and a download is held
            // for the next load.
            holdUndecoded(fetched, for: request.url)
            return .failure(.cancelled)
        case .failure(let error)?:
            // Held bytes that fail are let go like any failed download: the next load asks again. Only these
            // bytes: another download of the URL held meanwhile (one begun after a replacement or a
            // `removeAll()`, whose run this one did not share) is as good as before.
            if fetched.origin == .source {
                undecodedOriginals.removeValue(forKey: request.url.cacheKey) { $0 === fetched }
            }
            if !isSecondTry, let changed = changedVersion(of: request.url, since: fetched.original.fileStamp) {
                forgetDecoding(fetched, for: request.url, everyHold: true)  // torn: no other width takes them
                return await prepare(request, fileVersion: changed, priority: priority, isSecondTry: true)
            }
            // Anything else (a pixel budget a larger request exceeds) would fail from the source too.
            guard fetched.origin != .source, error.reason.suggestsDamage else {
                return .failure(.decodingFailed(error))
            }
            removeDamaged(fetched.original.data, for: request.url)
            forgetDecoding(fetched, for: request.url, everyHold: true)  // damaged: no other width takes them
            if isSecondTry || Task.isCancelled { return .failure(.decodingFailed(error)) }
            return await prepare(request, fileVersion: fileVersion, priority: priority, isSecondTry: true)
        case .success(let value)?:
            // A local file saved over while its bytes decoded (a photo edited in place) no longer holds this
            // picture: the file is read again, once, and its new version decoded, so the load neither delivers
            // nor keeps an image of bytes that are gone. Nobody else takes these bytes either.
            if !isSecondTry, let changed = changedVersion(of: request.url, since: fetched.original.fileStamp) {
                forgetDecoding(fetched, for: request.url, everyHold: true)
                return await prepare(
                    request, fileVersion: changed, priority: priority, isSecondTry: true,
                    decodedBefore: (fetched.original.data, value))
            }
            bitmap = value
        }
        let prepared = PreparedImage(
            bitmap, request: request, naturalSize: fetched.original.header.displaySize,
            fileStamp: fetched.original.fileStamp, sourceDigest: request.url.isRemote ? fetched.bytesDigest : nil)
        // Bytes looked up before a `removeAll()` that ran since, or before a revalidation replaced the
        // image, are delivered, not kept. Checked and kept in memory in one step: a `removeAll()` or a
        // replacement between the two would empty memory before they land.
        var wasHeld = false
        let storesOriginal = ifCurrent(
            generation: fetched.generation, replacement: fetched.replacement, forKey: request.url.cacheKey
        ) { () -> Bool in
            // Read before a load read the file's new version (or found it gone): delivered, not kept.
            if request.url.isFileURL, let latest = localFileVersions.value(forKey: request.url.cacheKey),
                latest != fetched.original.fileStamp
            {
                return false
            }
            // Read from a file missing when the load statted it and gone again after the read: they belong to
            // no version. Delivered, not kept: kept, they would match the missing file of every later load.
            if request.url.isFileURL, fetched.original.fileStamp == nil { return false }
            // Downloaded bytes bring their response's facts in this step too, before the bytes and the variant
            // are in memory: a hit on either before `keepOnDisk` records them (on another thread, even before
            // this step ends) would find none, and no file, and take them for stale.
            // Where memory took another response meanwhile, these bytes arrived last: their original goes
            // back with their facts and picture, even when it came from memory or another width kept it.
            let tookAnother = keepCacheMetadata(of: fetched, for: request.url)
            let first = fetched.claimStoring()
            if first || tookAnother { keepInMemory(fetched, for: request.url, overAnotherResponse: tookAnother) }
            if fetched.origin == .source {
                wasHeld = undecodedOriginals.value(forKey: request.url.cacheKey) === fetched
                undecodedOriginals.removeValue(forKey: request.url.cacheKey)
            }
            variants.insert(prepared, for: request)
            return first
        }
        if storesOriginal == true {
            keepOnDisk(fetched, for: request.url)
            // Held since an earlier load, they may have gone stale meanwhile: asked for again now, as a
            // stale entry from memory or disk is when shown, not only at the load after this one.
            if wasHeld { revalidateIfStale(request.url) }
        }
        return .success(prepared)
    }

    /// Whether memory holds bytes of `url` that a run may decode without fetching: an original, bytes a
    /// run of another width decodes, or a download held undecoded. A peek: where they go (or turn out to
    /// be another version of a local file) before the run looks, it fetches without a slot of
    /// ``fetchSlots``, as rarely.
    func holdsOriginal(of url: URL) -> Bool {
        let key = url.cacheKey
        return originals.contains(key) || decodingOriginals.withLock { $0[key] != nil }
            || undecodedOriginals.contains(key)
    }

    /// How a visible run's wait for a slot of ``fetchSlots`` ended.
    enum FetchSlotWait {
        /// It holds one.
        case slot(FetchSlotHold)
        /// `url`'s bytes are in memory, or arrived meanwhile: it fetches nothing.
        case notNeeded
        /// The run was cancelled first.
        case cancelled
    }

    /// Waits for a slot of ``fetchSlots`` for a visible run's fetch of `url`, at `priority`.
    func waitForFetchSlot(for url: URL, priority: RunPriority) async -> FetchSlotWait {
        let isNeeded: @Sendable () -> Bool = { [self] in !holdsOriginal(of: url) }
        // Bytes on disk ask the host nothing: they wait for a slot of the disk tier's, not behind the
        // host's loads, which may hang until their timeout. (Gone from disk by the time the run reads,
        // they are fetched under it, as rarely; a redirect moves the slot to a host's as ever.)
        let source = fetchSource(of: url)
        // Once only prefetches want the run, it goes on as a prefetch, which takes no slot.
        switch await fetchSlots.slot(
            for: url, in: source, priority: priority, endsWhenLowered: true, isNeeded: isNeeded)
        {
        case .slot(let release):
            return .slot(
                FetchSlotHold(release, of: url, source: source, in: fetchSlots, priority: priority, isNeeded: isNeeded))
        case .notNeeded: return .notNeeded
        case .cancelled: return .cancelled
        }
    }

    /// The set of ``fetchSlots`` (and the line of prefetches) that a load of `url` counts under: the disk
    /// tier's for a remote image stored there or waiting for the disk, which asks its host nothing (one
    /// `stat` and a look at the folder's queued writes), else `url`'s own source. A load that a redirect
    /// leads to another host moves there (``FetchSlotHold``); a prefetch still counts under its first.
    func fetchSource(of url: URL) -> String {
        url.isRemote && disk.isStoredOrQueued(url) ? FetchSlots.diskSource : FetchSlots.source(of: url)
    }

    /// Whether a fetch of `url` is in flight that a run keyed by `key` joins: it downloads nothing of its
    /// own, so it takes no slot of ``fetchSlots`` (one it took would go back as it joined); should that fetch
    /// end before the run joins it (its loads gone), the run takes one for the fetch it starts. Waiting for one,
    /// it would not be in when a download handed over by a load it replaced (``holdFetched(_:)``), which
    /// nobody else waits for, lands: the fetch then holds those bytes undecoded and ends the run's wait (as
    /// when it ends before the run has joined it at all, see `original(for:)`); joined at once, the run
    /// decodes them as they land.
    private func isFetching<Subject>(_ url: URL, under key: RunKey<Subject>) -> Bool {
        fetchRuns.contains(
            RunKey(
                subject: url.cacheKey, generation: key.generation, replacement: key.replacement,
                fileVersion: key.fileVersion))
    }

    /// The version of the local file `url` now, when it is not `read`, the version a load that failed
    /// found; `nil` when the file is unchanged, gone as it was, not local, or nobody wants the load.
    private func changedVersion(of url: URL, since read: FileStamp?) -> FileStamp? {
        guard url.isLocalFileURL, !Task.isCancelled, let now = fileStamp(of: url), now != read else { return nil }
        return now
    }

    /// Removes `damaged`, bytes of `url` from the tiers that failed to decode, from memory originals (where
    /// ``cachedOriginalBytes(for:)`` may have put the file's bytes) and the disk tier, where either still
    /// holds them: another width that failed on the same bytes first may have replaced them from the
    /// source since, and the replacement stays. On disk only the file found holding them goes, should a
    /// write put another in its place between the look and the removal (``DiskStore/remove(_:readFrom:)``).
    private func removeDamaged(_ damaged: Data, for url: URL) {
        let key = url.cacheKey
        if originals.value(forKey: key)?.data == damaged { originals.removeValue(forKey: key) }
        guard let entry = disk.stored(for: url), entry.data == damaged else { return }
        if let file = entry.identity {
            disk.remove(url, readFrom: file)
        } else {
            disk.remove(url)  // a write still waiting for the disk: dropped
        }
    }

    /// Holds bytes fresh from the source whose decode never finished, nobody wanting it any more, in
    /// ``undecodedOriginals`` for the next load of `url`; bytes from the tiers stay where they are, and a
    /// local file or `data:` URL, read again at no network cost, is not held. Not after a `removeAll()` or a
    /// replacement since they were looked up: no load could use them. Returns whether it holds them (not
    /// when they are more than the held downloads' budget takes).
    @discardableResult
    func holdUndecoded(_ fetched: FetchedOriginal, for url: URL) -> Bool {
        guard fetched.origin == .source, url.isRemote else { return false }
        let key = url.cacheKey
        let left = ifCurrent(generation: fetched.generation, replacement: fetched.replacement, forKey: key) {
            undecodedOriginals.insert(
                fetched, forKey: key, cost: fetched.original.data.count + Self.payloadCost(ofKey: key))
        }
        guard let left else { return false }
        return !left.contains { $0 === fetched }
    }

    /// Keeps what loads of `request`'s URL fetch or have fetched, for a load of `request` that replaces
    /// one of them, until the returned closure is called: the fetch run in flight, the bytes waiting for a
    /// decode in ``decodingOriginals`` (the replaced load, cancelled, would otherwise drop them, racing
    /// the new load's lookup, and the URL would be fetched again), and the run of `request` itself, whose
    /// decode the new load joins. Runs of other widths are not held: they would go on decoding an image
    /// nobody wants until the new load ends.
    private func holdFetched(_ request: ImageRequest) -> @Sendable () -> Void {
        let url = request.url
        let key = url.cacheKey
        // A local file's run is held whatever version it reads: the main actor does not stat, and a
        // wider load of a file that changed meanwhile starts a run of its own all the same.
        let current = runKey(key, for: url)
        let releaseRun = fetchRuns.hold {
            $0.subject == key && $0.generation == current.generation && $0.replacement == current.replacement
        }
        let releaseVariant = variantRuns.hold {
            $0.subject == request && $0.generation == current.generation && $0.replacement == current.replacement
        }
        let bytes = decodingOriginals.withLock { table -> FetchedOriginal? in
            guard let last = table[key]?.last else { return nil }
            table[key]?.append(last)
            return last
        }
        return { [self] in
            releaseVariant?()
            releaseRun?()
            if let bytes { forgetDecoding(bytes, for: url) }
        }
    }

    /// Drops one hold of a run on `fetched` from ``decodingOriginals``, or every hold; nothing when
    /// none is left.
    private func forgetDecoding(_ fetched: FetchedOriginal, for url: URL, everyHold: Bool = false) {
        let key = url.cacheKey
        decodingOriginals.withLock { table in
            if everyHold {
                table[key]?.removeAll { $0 === fetched }
            } else if let index = table[key]?.firstIndex(where: { $0 === fetched }) {
                table[key]?.remove(at: index)
            }
            if table[key]?.isEmpty == true { table[key] = nil }
        }
    }

    /// Keeps a decoded original in memory and in the size memo; one taken from memory only when memory has
    /// since taken `overAnotherResponse`'s bytes in its place.
    private func keepInMemory(_ fetched: FetchedOriginal, for url: URL, overAnotherResponse: Bool = false) {
        let original = fetched.original
        if fetched.origin != .memory || overAnotherResponse {
            keepOriginal(original, forKey: url.cacheKey)
        }
        memoize(original.pixelSize, forKey: url.cacheKey)
    }

    /// Keeps a decoded original on disk when it is remote and new: written in the background, so that
    /// the load is delivered without waiting for the disk queue (another commit, a trim, a `removeAll()`
    /// of any store on the folder) and holds no thread of the cooperative pool meanwhile. Memory serves
    /// the bytes and the size until the file is in place, and the disk tier's reads find the queued write
    /// once memory has let them go (a `clearMemory()`); ``waitForDiskMaintenance()`` waits for it.
    private func keepOnDisk(_ fetched: FetchedOriginal, for url: URL) {
        if fetched.origin == .source, url.isRemote, let policy = fetched.policy {
            // A download held while nobody wanted it (``undecodedOriginals``) has aged meanwhile.
            keepRemote(
                fetched.original, metadata: HTTPCacheMetadata(policy: policy, receivedAt: fetched.receivedAt),
                for: url, generation: fetched.generation, replacement: fetched.replacement, inBackground: true)
        }
    }
}
