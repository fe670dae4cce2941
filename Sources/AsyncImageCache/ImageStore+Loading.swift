import Foundation

/// A load started with ``ImageStore/load(_:completion:)``, which you can cancel.
public final class ImageLoadTask: Sendable {
    private let task: Task<Void, Never>

    init(_ task: Task<Void, Never>) {
        self.task = task
    }

    /// Stops waiting for the image. The completion handler still runs once, with `nil`, unless it
    /// already ran: cancel on the main thread (as when a cell is reused) and it cannot deliver the
    /// image afterwards. Unless another load is waiting for the same image, the download stops, a
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
    /// began shares neither: it reads the file again. For the reason of a failure use ``image(for:)``.
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

    func prepared(
        _ request: ImageRequest, priority: ImageLoadPriority = .normal
    ) async -> Result<PreparedImage, ImageLoadingError> {
        let hit = variants.value(for: request)
        // A local file may have changed since it was decoded, or since a load in flight read it: one
        // stat, here off the caller's thread (``cachedImage(for:)`` never looks).
        let version = request.url.isFileURL ? fileStamp(of: request.url) : nil
        if let hit {
            if !request.url.isFileURL || hit.fileStamp == version {
                count { $0.variantHits += 1 }
                markDiskUse(of: request.url, hit.diskUse)
                // Not for a load cancelled before it started (a row flung past): it shows nothing, so it
                // asks the server nothing; the next load that shows the image revalidates it.
                if !Task.isCancelled { revalidateIfStale(request.url) }
                return .success(hit)
            }
            variants.removeVariants(of: request.url)
        }
        let key = runKey(request, for: request.url, fileVersion: version)
        let outcome = await variantRuns.value(for: key, priority: priority) { [self] priority in
            // A visible run fetches once one of the few ``fetchSlots`` is free, and gives it back as it
            // gets a decode slot (or ends); a prefetch's run is bounded by ``prefetchConcurrency`` (per source), and one
            // whose bytes are in memory already, or on the way (a fetch in flight it joins), fetches nothing,
            // so it does not wait behind the fetches; nor does one whose bytes arrive while it waits (another
            // width's fetch, or a prefetch's). The slot moves with a download that a redirect leads to another
            // host (``FetchSlotHold``).
            var fetchSlot: FetchSlotHold?
            if priority.current == .normal, !holdsOriginal(of: request.url), !isFetching(request.url, under: key) {
                let url = request.url
                let isNeeded: @Sendable () -> Bool = { [self] in !holdsOriginal(of: url) }
                // Bytes on disk ask the host nothing: they wait for a slot of the disk tier's, not behind the
                // host's loads, which may hang until their timeout. (Gone from disk by the time the run reads,
                // they are fetched under it, as rarely; a redirect moves the slot to a host's as ever.)
                let source = fetchSource(of: url)
                switch await fetchSlots.slot(for: url, in: source, priority: priority, isNeeded: isNeeded) {
                case .slot(let release):
                    fetchSlot = FetchSlotHold(
                        release, of: url, source: source, in: fetchSlots, priority: priority, isNeeded: isNeeded)
                case .notNeeded: break
                case .cancelled: return .failure(.cancelled)
                }
            }
            // Once only prefetches want the run (its visible loads left), it is bounded as a prefetch and
            // gives the slot back: holding it, it would keep the host's next visible load from fetching
            // while it waits for a decode slot behind the visible loads. Weakly: the hold keeps the
            // priority, which keeps this handler.
            if let fetchSlot { priority.whenLowered { [weak fetchSlot] in fetchSlot?.giveBack() } }
            defer { fetchSlot?.giveBack() }
            return await prepare(request, fileVersion: version, priority: priority, fetchSlot: fetchSlot)
        }
        if case .failure(let error) = outcome, error != .cancelled { count { $0.failures += 1 } }
        return outcome
    }

    /// One run of the pipeline for `request`, shared by every waiter for it; for a local file, by those
    /// that found it at `fileVersion`.
    ///
    /// A file of the disk tier was stored only after it decoded, so cached bytes that now fail as
    /// damaged (cut short, corrupt, unrecognisable) were damaged on disk: they leave both tiers and,
    /// once, the image is fetched afresh from the source within the same load (`isSecondTry`).
    ///
    /// A local file that fails to read or decode after it changed under the load (read while another
    /// program rewrote it in place: cut short, empty, or gone for a moment) is read again, once, at
    /// its new version within the same load.
    ///
    /// `fetchSlot` is the run's slot of ``fetchSlots``, which its download's redirects move: the run gives
    /// it back as it gets a decode slot, so that another load may start fetching. A second try after a
    /// decode that failed fetches without one, once per run at most.
    private func prepare(
        _ request: ImageRequest, fileVersion: FileStamp?, priority: RunPriority,
        fetchSlot: FetchSlotHold? = nil, isSecondTry: Bool = false
    ) async -> Result<PreparedImage, ImageLoadingError> {
        let fetched: FetchedOriginal
        switch await original(for: request.url, fileVersion: fileVersion, priority: priority, fetchSlot: fetchSlot) {
        case .success(let value):
            fetched = value
        case .failure(let error):
            if error != .cancelled, !isSecondTry, let changed = changedVersion(of: request.url, since: fileVersion) {
                return await prepare(
                    request, fileVersion: changed, priority: priority, fetchSlot: fetchSlot, isSecondTry: true)
            }
            return .failure(error)
        }
        // Until it is stored (or dropped), another width of the URL shares these bytes.
        decodingOriginals.withLock { $0[request.url.cacheKey, default: []].append(fetched) }
        defer { forgetDecoding(fetched, for: request.url) }
        // Loads of other widths waiting for a fetch slot take them now, instead of fetching them again.
        fetchSlots.bytesArrived(for: request.url)
        // Waits for a decode slot, then lets another load start fetching; a run cancelled meanwhile never
        // decodes, and one cancelled while it decodes stops at the decoder's next check.
        let cancellation = DecodeCancellation(rowObserver: configuration.decodeRowObserver)
        let rendered = await decodeSlots.run(priority: priority, cancellation: cancellation) {
            [self] () -> Result<Bitmap, ImageDecodingError> in
            fetchSlot?.giveBack()
            return Result { () throws(ImageDecodingError) in
                // Only a visible load spends other cores to finish sooner; a prefetch has nobody waiting.
                try render(
                    fetched.original, for: request, cancellation: cancellation,
                    mayUseOtherCores: priority.current == .normal)
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
            bitmap = value
        }
        let prepared = PreparedImage(
            bitmap, request: request, naturalWidth: fetched.original.header.displaySize.width,
            fileStamp: fetched.original.fileStamp)
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
            // Downloaded bytes bring their response's facts in this step too, before the bytes and the variant
            // are in memory: a hit on either before `keepOnDisk` records them (on another thread, even before
            // this step ends) would find none, and no file, and take them for stale.
            restoreCacheMetadata(
                fetched.cacheMetadata
                    ?? fetched.policy.map { HTTPCacheMetadata(policy: $0, receivedAt: fetched.receivedAt) },
                for: request.url)
            let first = fetched.claimStoring()
            if first { keepInMemory(fetched, for: request.url) }
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
    private func holdsOriginal(of url: URL) -> Bool {
        let key = url.cacheKey
        return originals.contains(key) || decodingOriginals.withLock { $0[key] != nil }
            || undecodedOriginals.contains(key)
    }

    /// The set of ``fetchSlots`` (and the line of prefetches) that a load of `url` counts under: the disk
    /// tier's for a remote image stored there, which asks its host nothing (one `stat`), else `url`'s own
    /// source. A load that a redirect leads to another host moves there (``FetchSlotHold``); a prefetch
    /// still counts under its first.
    func fetchSource(of url: URL) -> String {
        url.isRemote && disk.contains(url) ? FetchSlots.diskSource : FetchSlots.source(of: url)
    }

    /// Whether a fetch of `url` is in flight that a run keyed by `key` joins: it downloads nothing of its
    /// own, so it takes no slot of ``fetchSlots`` (one it took would go back as it joined). Waiting for one,
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
    /// source since, and the replacement stays.
    private func removeDamaged(_ damaged: Data, for url: URL) {
        let key = url.cacheKey
        if originals.value(forKey: key)?.data == damaged { originals.removeValue(forKey: key) }
        if disk.data(for: url) == damaged { disk.remove(url) }
    }

    /// Holds bytes fresh from the source whose decode never finished, nobody wanting it any more, in
    /// ``undecodedOriginals`` for the next load of `url`; bytes from the tiers stay where they are, and a
    /// local file or `data:` URL, read again at no network cost, is not held. Not after a `removeAll()` or a
    /// replacement since they were looked up: no load could use them. Returns whether it holds them (not
    /// when they are more than the held downloads' budget takes).
    @discardableResult
    private func holdUndecoded(_ fetched: FetchedOriginal, for url: URL) -> Bool {
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

    /// Decodes at the smallest size that covers the request, then orients, resizes, converts an embedded
    /// colour profile to sRGB and rounds.
    ///
    /// With `cancellation` raised, it stops at the decoder's next check or before the next step, and
    /// throws ``ImageDecodingError/Reason/cancelled``. Without `mayUseOtherCores` every step runs on
    /// the calling thread alone; it is read as each step starts, so a prefetch that a visible load joins
    /// while it decodes resizes as the visible load.
    func render(
        _ original: OriginalImage, for request: ImageRequest, cancellation: DecodeCancellation? = nil,
        mayUseOtherCores: @autoclosure () -> Bool = true
    ) throws(ImageDecodingError) -> Bitmap {
        let header = original.header
        let natural = header.displaySize
        var target: PixelSize?
        if let width = request.targetPixelWidth, width < natural.width {
            let height = (Double(natural.height) * Double(width) / Double(natural.width)).rounded()
            target = PixelSize(width: width, height: max(1, Int(height)))
        }
        let minimumStored = target.map { header.orientation.swapsWidthAndHeight ? $0.transposed : $0 }
        var context = ImageDecodingContext(
            header: header, minimumSize: decodingMinimum(minimumStored, header), pixelBudget: configuration.pixelBudget)
        context.cancellation = cancellation
        // A JPEG may come out of the decoder already resized (in stored orientation: the filter is the
        // same along both axes, so turning afterwards gives the same picture and turns a smaller bitmap;
        // the same bytes only in floating point, as the fixed-point path rounds between its two passes,
        // up to 15 levels apart on an opaque image turned 5-8).
        // Every step below looks at the flag before it starts; the row-by-row ones also while they run.
        let checkCancellation = { () throws(ImageDecodingError) in try context.checkCancellation(format: header.format)
        }
        // Cancelled between getting its slot and starting: no decode started, none is counted or reported.
        try checkCancellation()
        report(.decode, request.url)
        count { $0.decodes += 1 }
        var bitmap: Bitmap
        if let stored = minimumStored,
            let resized = try decodeResizing(
                original.data, context, to: stored, url: request.url, mayUseOtherCores: mayUseOtherCores())
        {
            bitmap = resized
        } else {
            bitmap = try configuration.decoder.decode(original.data, context: context)
            // Another decoder (the JPEG decoder itself, one wrapping the default) may scale a JPEG in the DCT
            // too: resized in stored orientation over the span of the picture, as the default path does.
            if let stored = minimumStored, let extent = scaledJPEGExtent(of: bitmap, context) {
                try checkCancellation()
                report(.resize, request.url)
                bitmap = try resized(bitmap, to: stored, sourceExtent: extent, context, mayUseOtherCores())
            }
        }
        if header.orientation != .up {
            try checkCancellation()
            report(.orient, request.url)
            bitmap = bitmap.oriented(header.orientation)
        }
        // A file that codes more than its header declares (a hostile HEIF within the pixel budget)
        // decodes larger than its natural size: it comes out at the size the store reports for it, not
        // at the coded one (4096x4096 for a file that declares 64x64, for any request wider than 64).
        if target == nil, bitmap.pixelSize.width > natural.width || bitmap.pixelSize.height > natural.height {
            target = natural
        }
        if let target, bitmap.pixelSize != target {
            try checkCancellation()
            report(.resize, request.url)
            bitmap = try resized(bitmap, to: target, sourceExtent: nil, context, mayUseOtherCores())
        }
        #if !canImport(ImageIO)
        // The Linux decoders hand out samples as stored; converted now, there are the fewest of them.
        if configuration.decoder is ImageDecoders.Default,
            let profile = ColorProfile.embedded(in: original.data, format: header.format), !profile.isSRGB
        {
            try checkCancellation()
            report(.convertColor, request.url)
            bitmap = bitmap.convertedToSRGB(from: profile)
        }
        #endif
        let radius = request.cornerPixelRadius(atNaturalWidth: natural.width)
        if radius > 0 {
            try checkCancellation()
            report(.roundCorners, request.url)
            bitmap = bitmap.roundingCorners(radius: radius)
        }
        return bitmap
    }

    /// `bitmap` resized as ``Bitmap/resized(to:)`` does, stopping part way when `context` is cancelled;
    /// split across the cores only when `usesOtherThreads`.
    private func resized(
        _ bitmap: Bitmap, to size: PixelSize, sourceExtent: SIMD2<Double>?, _ context: ImageDecodingContext,
        _ usesOtherThreads: Bool
    ) throws(ImageDecodingError) -> Bitmap {
        configuration.resizeThreadsObserver?(usesOtherThreads)
        guard
            let resized = bitmap.resized(
                to: size, sourceExtent: sourceExtent, cancellation: context.cancellation,
                usesOtherThreads: usesOtherThreads)
        else { throw ImageDecodingError(format: context.header.format, reason: .cancelled) }
        return resized
    }

    /// The span of the picture in `bitmap`, a JPEG's decode for `context` by a decoder other than the
    /// default one, when it has the size libjpeg gives at the reduced scale `n/8` that `context` asks for
    /// and that scale pads the last column or row (the picture spans `side * n / 8` of the
    /// `ceil(side * n / 8)` pixels); `nil` otherwise, as for a decoder that does not scale.
    private func scaledJPEGExtent(of bitmap: Bitmap, _ context: ImageDecodingContext) -> SIMD2<Double>? {
        #if canImport(CJPEGSupport)
        let stored = context.header.storedSize
        guard context.header.format == .jpeg else { return nil }
        let numerator = ImageDecoders.JPEG.scaleNumerator(imageSize: stored, covering: context.minimumSize)
        guard bitmap.pixelSize == ImageDecoders.JPEG.scaledSize(stored, numerator: numerator) else { return nil }
        return ImageDecoders.JPEG.pictureExtent(stored, numerator: numerator)
        #else
        return nil
        #endif
    }

    /// The size to ask the decoder to cover for a bitmap of `minimum` (stored orientation).
    ///
    /// libwebp scales while it decodes by averaging areas (a box filter): shrunk straight to the size, a
    /// picture with alpha edges came out 22 dB from the Lanczos resize of the full image at 2 pixels wide,
    /// 28 dB at 9. A WebP for the default decoder is decoded to cover three times the size, and at least
    /// 24 pixels a side, and the resize finishes it (as Pillow's `reducing_gap` does): 35 dB and more.
    /// That is for quality only: when the larger decode would be over the pixel budget and the one at the
    /// size is not, the decoder is asked for the size, as before.
    private func decodingMinimum(_ minimum: PixelSize?, _ header: ImageHeader) -> PixelSize? {
        #if canImport(ImageIO)
        return minimum
        #else
        guard let minimum, header.format == .webp, configuration.decoder is ImageDecoders.Default else {
            return minimum
        }
        let larger = PixelSize(width: max(3 * minimum.width, 24), height: max(3 * minimum.height, 24))
        guard header.storedSize.scaledDown(toCover: larger).pixelCount <= configuration.pixelBudget else {
            return minimum
        }
        return larger
        #endif
    }

    /// A JPEG or PNG for the default decoder decoded and resized in one step, row by row; `nil` for
    /// anything else (which takes the steps one by one), and for the PNGs that only decode whole. A
    /// JPEG's resize overlaps its decode on a second thread only when `mayUseOtherCores` and a core has
    /// no decode of its own: when all are busy, the handing over would only cost.
    private func decodeResizing(
        _ data: Data, _ context: ImageDecodingContext, to size: PixelSize, url: URL, mayUseOtherCores: Bool
    ) throws(ImageDecodingError) -> Bitmap? {
        guard configuration.decoder is ImageDecoders.Default else { return nil }
        switch context.header.format {
        case .jpeg:
            #if canImport(CJPEGSupport)
            report(.resize, url)
            let overlapping =
                mayUseOtherCores && decodeSlots.busyCount < ProcessInfo.processInfo.activeProcessorCount
            configuration.resizeThreadsObserver?(overlapping)
            return try ImageDecoders.JPEG().decode(data, context: context, resizedTo: size, overlapping: overlapping)
            #else
            return nil
            #endif
        case .png:
            #if canImport(CPNG)
            // Reported once it is known to have streamed, so a PNG that decodes whole reports one resize.
            let bitmap = try ImageDecoders.PNG().decode(data, context: context, resizedTo: size)
            if bitmap != nil { report(.resize, url) }
            return bitmap
            #else
            return nil
            #endif
        default:
            return nil
        }
    }

    /// The original bytes for `url`: from memory, else one shared fetch from disk or the source, whose
    /// download waits for a connection at the highest `priority` of the runs that wait for it. A local
    /// file's fetch is shared only by the runs that found it at the same `fileVersion`. The fetch a run
    /// starts moves that run's `fetchSlot` along its redirects to other hosts.
    private func original(
        for url: URL, fileVersion: FileStamp?, priority: RunPriority, fetchSlot: FetchSlotHold? = nil
    ) async -> Result<FetchedOriginal, ImageLoadingError> {
        let generation = disk.generation
        let replacement = replacementCount(of: url)
        if let original = originals.value(forKey: url.cacheKey), isCurrent(original, for: url, at: fileVersion) {
            count { $0.originalMemoryHits += 1 }
            markDiskUse(of: url, original.diskUse)
            let metadata = revalidateIfStale(url)
            return .success(
                FetchedOriginal(
                    original, origin: .memory, generation: generation, replacement: replacement,
                    cacheMetadata: metadata))
        }
        if let decoding = decodingOriginals.withLock({ $0[url.cacheKey]?.last }),
            decoding.generation == generation, decoding.replacement == replacement,
            isCurrent(decoding.original, for: url, at: fileVersion)
        {
            return .success(decoding)
        }
        if let held = heldDownload(of: url, generation: generation, replacement: replacement, at: fileVersion) {
            return .success(held)
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
            }
        ) { [self] fetchPriority in
            // Held by a fetch that ended between the look above and this run's start, with nobody waiting:
            // it held them before it left the table, so a run started after it finds them here.
            if let held = heldDownload(of: url, generation: generation, replacement: replacement, at: fileVersion) {
                return .success(held)
            }
            // The fetch keeps the run's slot while it goes on for a visible run: the runs that joined it
            // hold none, and would fetch under none if this run were cancelled first.
            let downloading = fetchSlot?.keep(whileDownloadingAt: fetchPriority)
            defer { downloading?() }
            return await HTTPDataLoader.$runPriority.withValue(fetchPriority) {
                await HTTPDataLoader.$fetchSlot.withValue(fetchSlot) {
                    await fetchOriginal(url, generation: generation, replacement: replacement)
                }
            }
        }
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
    /// replacement count, read as ``original(for:fileVersion:priority:)`` reads them before it looks anything
    /// up, and for a local file under `fileVersion`, the version the load found.
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
        if url.isRemote, let (data, file) = disk.stored(for: url) {
            if let header = try? ImageHeader.parse(data) {
                count { $0.diskHits += 1 }
                // Repaired only while these bytes are current, and only on the file they came from: not
                // once a new image has replaced them, here or in another process.
                if let file, disk.pixelSize(for: url) != header.displaySize {
                    _ = ifCurrent(generation: generation, replacement: replacement, forKey: url.cacheKey) {
                        disk.setPixelSize(header.displaySize, for: url, readFrom: file)
                    }
                }
                // A stale entry is shown while it revalidates.
                let metadata = revalidateIfStale(url)
                return .success(
                    FetchedOriginal(
                        OriginalImage(data: data, header: header, fileStamp: nil), origin: .disk,
                        generation: generation, replacement: replacement, cacheMetadata: metadata))
            }
            disk.remove(url)  // not an image any more: fall through to the source
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
                        .fileUnavailable(path: url.path, reason: "changed while it was read, \(attempt) times in a row")
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
        guard let prefix = DiskStore.prefix(ofFileAtPath: url.path, maxLength: 16 * 1024) else { return nil }
        do {
            _ = try ImageHeader.parse(prefix)
            return nil
        } catch {
            return error.reason == .truncated ? nil : error
        }
    }

    /// Keeps a decoded original in memory and in the size memo.
    private func keepInMemory(_ fetched: FetchedOriginal, for url: URL) {
        let original = fetched.original
        if fetched.origin != .memory {
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

    /// Whether a memory original still matches its source: for a local file, whether it was read at
    /// `fileVersion`, the version the load found (same dates, size and identity).
    private func isCurrent(_ original: OriginalImage, for url: URL, at fileVersion: FileStamp?) -> Bool {
        guard url.isFileURL else { return true }
        return original.fileStamp != nil && original.fileStamp == fileVersion
    }

    /// The stamp of the local file `url` names; `nil` for a `file:` URL on another host
    /// (`file://server/...`), whose path names no file here: neither statted nor read.
    func fileStamp(of url: URL) -> FileStamp? {
        guard url.isLocalFileURL else { return nil }
        return configuration.fileInspector.stamp(ofFileAtPath: url.path)
    }
}

extension URL {
    /// The key of this URL in the memory tiers and the in-flight table: its absolute string with the
    /// scheme in lower case (schemes are case-insensitive: `HTTP://h/a.jpg` is `http://h/a.jpg`), the
    /// same string whose SHA-256 names the disk file.
    var cacheKey: String {
        let text = absoluteString
        let bytes = text.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
            bytes[..<colon].contains(where: Self.isUppercaseLetter), bytes[..<colon].allSatisfy(Self.isSchemeByte)
        else { return text }
        return text[..<colon].lowercased() + text[colon...]
    }

    private static func isUppercaseLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// Letters, digits, "+", "-" and ".", what RFC 3986 allows in a scheme.
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isUppercaseLetter(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "+-.".utf8.contains(byte)
    }

    /// This URL with its scheme in lower case, as URLSession needs it (it refuses `HTTP://`); the URL
    /// itself when its scheme already is.
    var withLowercaseScheme: URL {
        let key = cacheKey
        guard key != absoluteString else { return self }
        return URL(string: key) ?? self
    }

    /// Whether the URL names a file on this machine: a `file:` URL with no host, or `localhost`
    /// (RFC 8089). `file://server/photo.jpg` names one on another machine, which is never read.
    /// (SPI for `aic`, which reads local files itself.)
    @_spi(Tools) public var isLocalFileURL: Bool {
        guard isFileURL else { return false }
        guard let host, !host.isEmpty else { return true }
        return host.lowercased() == "localhost"
    }

    /// Whether the URL is fetched over the network (and so kept in the disk tier).
    var isRemote: Bool {
        let scheme = self.scheme?.lowercased()
        return scheme == "http" || scheme == "https"
    }
}
