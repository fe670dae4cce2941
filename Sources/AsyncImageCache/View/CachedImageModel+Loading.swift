import Foundation

extension CachedImageModel {
    /// Whether a caller of ``load()`` has nothing left to wait for: no load in flight, and the
    /// layout is known (before it, there is no request to wait on).
    var isSettled: Bool {
        loading == nil && request != nil
    }

    /// Starts loading the request for the current layout unless the model is not shown, its last load
    /// failed, the image already covers it, or a load at least as wide, with the same corners, is in flight.
    func startLoadIfNeeded() {
        guard isActive, !lastLoadFailed, let request, let width = request.targetPixelWidth, needsImage(for: request)
        else {
            resumeWaitersIfSettled()
            return
        }
        if let loading, (loading.request.targetPixelWidth ?? .max) >= width,
            Self.corners(of: loading.request, match: request, naturalSize: naturalSize)
        {
            return
        }
        lastRequest = request
        if takeFromMemory(request) { return }
        nextLoadID += 1
        let id = nextLoadID
        // The new load cancels the one it replaces once it runs, holding the fetch of the URL they
        // share meanwhile: the download goes on for the wider image instead of starting again.
        let task = store.load(request, replacing: loading?.task ?? adoptedLoad) { [weak self] image in
            self?.finishLoad(id, image: image)
        }
        adoptedLoad = nil
        loading = (request, task, id)
    }

    /// Draws the store's image for `request` when memory has it: a load it covers is cancelled, and
    /// callers of ``load()`` with nothing left to wait for return. Whether memory had it.
    func takeFromMemory(_ request: ImageRequest) -> Bool {
        guard let cached = store.cachedImage(for: request) else { return false }
        lastRequest = request
        show(cached, for: request)
        cancelLoadIfCovered()
        dropAdoptedLoad()
        if request.url.isLocalFileURL {
            uncheckedFileRequest = request
            checkFileDrawnFromMemory()
        } else {
            revalidateDrawnFromMemory(request.url)
        }
        // The image may have shown an aspect wider than was known, that needs more pixels (in either content mode).
        if let wider = self.request, wider != request, needsImage(for: wider) {
            if !takeFromMemory(wider) { startLoadIfNeeded() }
        } else {
            resumeWaitersIfSettled()
        }
        return true
    }

    /// While the model is shown, has the store load again the request of a local file's image drawn
    /// from memory: the store checks the file's version (dates, size and identity) off the main thread
    /// and, when it changed (a photo edited and saved in place), decodes it anew, and the model draws
    /// that; when it did not, the load answers from memory. Memory lookups themselves never touch the file.
    ///
    /// A check that answers while a load is in flight, which reads the file as it is now, is put off for
    /// it: dropped once it lands (``finishLoad(_:image:)``), made again once it fails or is cancelled
    /// (``cancelLoad()``, when the frame goes back to one the current image covers).
    func checkFileDrawnFromMemory() {
        guard isActive, fileCheck == nil, let request = uncheckedFileRequest else { return }
        uncheckedFileRequest = nil
        nextLoadID += 1
        let id = nextLoadID
        let drawnBefore = drawCount
        let task = store.load(request) { [weak self] image in
            // A check stopped by `disappear()` answers late, maybe after the next check started.
            guard let self, fileCheck?.id == id else { return }
            fileCheck = nil
            // Drawn only while the image shown is still the one checked: an image drawn since (a load
            // that landed, one from memory for another frame) came from the file as it is now, or is
            // checked in turn. A load started since (a wider frame) brings the file as it is now, unless
            // it is cancelled: the check is made again then.
            if let image, drawCount == drawnBefore {
                if loading != nil {
                    uncheckedFileRequest = uncheckedFileRequest ?? request
                } else {
                    show(image, for: request)
                    // The new file may not cover a frame that the old image did (a source that was narrower).
                    startLoadIfNeeded()
                }
            }
            // One drawn from memory meanwhile, for another frame, is checked in turn (after the load).
            if loading == nil { checkFileDrawnFromMemory() }
        }
        fileCheck = (task, id)
    }

    /// While the model is shown, has the store ask the server about a remote image drawn from memory when
    /// its caching facts say it is stale (`no-cache`, past its `max-age`), as a store load that memory
    /// answers does: once each time the model is shown. The image drawn stays; a changed one replaces it
    /// in the store, for the next time the view is shown. Off the main thread: facts memory has let go of
    /// are read from the disk file's attribute.
    func revalidateDrawnFromMemory(_ url: URL) {
        guard isActive, !revalidationAsked, url.isRemote else { return }
        revalidationAsked = true
        Task.detached(priority: .utility) { [store] in store.revalidateIfStale(url) }
    }

    /// Whether the current image falls short of `request`: narrower than it needs, or with corners
    /// that, drawn at its width, come out more than half a pixel off its radius (the frame shrank, or
    /// grew past `maxPixelWidth`, since the image was asked for).
    func needsImage(for request: ImageRequest) -> Bool {
        guard let width = request.targetPixelWidth else { return false }
        return width > coveredPixelWidth
            || !Self.corners(cornerRadiusPerPixel, match: request, naturalSize: naturalSize)
    }

    /// Whether the image `loaded` asks for, drawn at `request`'s width, has `request`'s corners
    /// within half a pixel (see ``corners(_:match:naturalSize:)``).
    static func corners(of loaded: ImageRequest, match request: ImageRequest, naturalSize: CGSize?) -> Bool {
        corners(cornerRadiusPerPixel(of: loaded), match: request, naturalSize: naturalSize)
    }

    /// Whether corners of `radiusPerPixel` times the width, drawn at `request`'s width, are its radius
    /// within half a pixel. With the image's aspect known (`naturalSize`), both are first clamped to
    /// half the shorter side of the image at that width, as corners are cut: a circle asked for with a
    /// radius "large enough" stays a circle at every width, and a frame that shrinks needs no new
    /// decode for it. No corners match only no corners.
    static func corners(_ radiusPerPixel: Double, match request: ImageRequest, naturalSize: CGSize?) -> Bool {
        guard let width = request.targetPixelWidth else { return true }
        if (radiusPerPixel == 0) != (request.cornerPixelRadius == 0) { return false }
        var (drawn, asked) = (radiusPerPixel * Double(width), Double(request.cornerPixelRadius))
        if let naturalSize, naturalSize.width > 0, naturalSize.height > 0 {
            let height = Double(decodedHeight(of: naturalSize, atWidth: CGFloat(width)))
            drawn = Bitmap.cutRadius(drawn, width: Double(width), height: height)
            asked = Bitmap.cutRadius(asked, width: Double(width), height: height)
        }
        return abs(drawn - asked) <= 0.5
    }

    /// The corner radius `request` asks for per pixel of its width.
    static func cornerRadiusPerPixel(of request: ImageRequest) -> Double {
        guard let width = request.targetPixelWidth else { return 0 }
        return Double(request.cornerPixelRadius) / Double(width)
    }

    /// Takes the outcome of load `id`; the outcome of a load that was replaced or cancelled is
    /// dropped.
    func finishLoad(_ id: UInt64, image: PlatformImage?) {
        guard let loading, loading.id == id else { return }
        self.loading = nil
        if let image {
            show(image, for: loading.request)
            // Read from the file as it is now: the image it replaces needs no check.
            uncheckedFileRequest = nil
        }
        // The frame may have grown past this load while it ran without a wider one starting (the
        // model was not active then), or the image shown an aspect that needs a wider one (in either
        // content mode); a failure is not retried until the next load().
        if image != nil {
            startLoadIfNeeded()
        } else {
            lastLoadFailed = true
            resumeWaitersIfSettled()
            checkFileDrawnFromMemory()
        }
    }

    /// Draws `image`, which came for `request`, and notes the widths and corners it serves.
    func show(_ image: PlatformImage, for request: ImageRequest) {
        let width = image.pixelSize.width
        // Narrower than asked: the source is that small, and a wider request brings the same pixels,
        // unless its corners, kept the same on screen, need a smaller radius on them.
        let requested = request.targetPixelWidth ?? .max
        coveredPixelWidth = width >= requested ? width : request.cornerPixelRadius == 0 ? .max : requested
        cornerRadiusPerPixel = Self.cornerRadiusPerPixel(of: request)
        draw(image)
    }

    /// Draws `image`, fills in the reserved box if it was unknown and takes the image's aspect for the
    /// requests that follow.
    func draw(_ image: PlatformImage) {
        self.image = image
        drawCount &+= 1
        // The store's size is the source's own (a scaled-down image's height is rounded), when it is this
        // image's: a load under way delivers the version it read, and the store may know another by then (a
        // remote image forgotten with `removeImage(for:)` and loaded anew meanwhile).
        let own = image.pixelSize.cgSize
        let stored = url.flatMap(store.cachedPixelSize(for:))
        let size = stored.flatMap { Self.couldBeDecode(own, of: $0) ? $0 : nil } ?? own
        if reservedSize == nil { reservedSize = size }
        naturalSize = size
        onChange?()
    }

    /// Whether `image`, a decode of some source, can be one of `source`: `source` itself at its width or
    /// wider, else the height the store gives a decode of that width (`source`'s aspect, rounded, at least 1).
    static func couldBeDecode(_ image: CGSize, of source: CGSize) -> Bool {
        guard source.width > 0, source.height > 0 else { return false }
        if image.width >= source.width { return image == source }
        return image.height == decodedHeight(of: source, atWidth: image.width)
    }

    /// The height the store gives a decode `width` pixels wide of a `source`-sized image (positive sides):
    /// the aspect kept, rounded, at least 1.
    static func decodedHeight(of source: CGSize, atWidth width: CGFloat) -> CGFloat {
        max(1, (source.height * width / source.width).rounded())
    }

    /// Cancels the load in flight when the current image already covers what it would bring, or the
    /// current layout: then the load is for a frame the model no longer has (one it grew to and shrank
    /// back from), whose image, with rounded corners, would only replace this one with corners that no
    /// longer fit.
    func cancelLoadIfCovered() {
        guard let loading else { return }
        guard !needsImage(for: loading.request) || request.map({ !needsImage(for: $0) }) == true else { return }
        cancelLoad()
    }

    /// Cancels the load in flight, and one handed over by the model this one replaced.
    func cancelLoad() {
        let cancelled = loading
        loading = nil
        cancelled?.task.cancel()
        dropAdoptedLoad()
        // A check put off for the load (see `checkFileDrawnFromMemory()`) is made now, while shown.
        checkFileDrawnFromMemory()
    }

    /// Gives up the load in flight without cancelling it, for the model that replaces this one (see
    /// ``init(url:intrinsicSize:cornerRadius:contentMode:maxPixelWidth:displayScale:layoutSize:replacing:store:)``);
    /// callers of ``load()`` with nothing left to wait for return. A model that has started no load of
    /// its own yet hands on the one it took over itself, so a chain of quick replacements (a window
    /// dragged across screens of three scales) keeps one download.
    func handOverLoad() -> ImageLoadTask? {
        let handed = loading?.task ?? adoptedLoad
        loading = nil
        adoptedLoad = nil
        resumeWaitersIfSettled()
        return handed
    }

    /// Cancels the load handed over by the model this one replaced, when no load of this model took it.
    func dropAdoptedLoad() {
        let dropped = adoptedLoad
        adoptedLoad = nil
        dropped?.cancel()
    }

    /// A caller of ``load()`` whose task was cancelled: it stops waiting, and when it was the last
    /// one the model stops loading, as on ``disappear()``.
    func leave(_ waiterID: UInt64) {
        guard let continuation = waiters.removeValue(forKey: waiterID) else { return }
        continuation.resume()
        if waiters.isEmpty {
            isActive = false
            cancelLoad()
            stopFileCheck()
        }
    }

    /// Stops the check of a local file in flight: a check stopped before it answered is made again when
    /// the model is next shown (see ``load()``).
    func stopFileCheck() {
        fileCheck?.task.cancel()
        fileCheck = nil
    }

    func resumeWaitersIfSettled() {
        if isSettled { resumeWaiters() }
    }

    func resumeWaiters() {
        let resumed = waiters.values
        waiters = [:]
        for continuation in resumed { continuation.resume() }
    }
}
