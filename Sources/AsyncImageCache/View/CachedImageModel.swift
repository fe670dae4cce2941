import Foundation

/// The logic of one image on screen, free of any UI framework: which box to reserve, which pixels
/// to ask for, and when to ask again. The SwiftUI view `CachedImage` is a thin binding of it; a
/// UIKit or AppKit view, a test or a benchmark can drive it the same way.
///
/// ```swift
/// let model = CachedImageModel(url: url, intrinsicSize: CGSize(width: 1024, height: 768), cornerRadius: 10)
/// model.onChange = { [weak view] in view?.setNeedsDisplay() }
/// // Reserve `model.reservedSize` (its aspect ratio) now; it does not change when the image lands.
/// model.layoutChanged(to: CGSize(width: 320, height: 240))   // from layout, in points
/// await model.load()                                           // draw `model.image` when it is set
/// model.disappear()                                            // when the view leaves the screen
/// ```
///
/// - The box: ``reservedSize`` is `intrinsicSize`, else the store's ``ImageStore/cachedPixelSize(for:)``
///   (known even on the first frame after a relaunch), else `nil`. Only in that last case does it
///   change, once, when the image arrives: the one case that reflows.
/// - The pixels: the laid-out width times the display scale, capped at `maxPixelWidth` and
///   rounded up to whole pixels; the corner radius scaled the same way, so it is `cornerRadius`
///   points on screen. A source narrower than that is not scaled up; its corners get fewer pixels
///   in proportion, so they are still `cornerRadius` points once the image is drawn over the frame.
///   With ``ContentMode/fill``, an image wider in aspect than its frame is drawn wider than the
///   frame, to cover its height; with ``ContentMode/fit``, one taller in aspect is drawn narrower, to
///   fit it: the width is the one it is drawn at, from the aspect of `intrinsicSize`, else of the
///   store's size, else (before the first image) the frame's own.
/// - Asking again: a frame that grows wider than the current image's pixels starts a larger
///   request and keeps drawing the current image until it lands (for a source narrower than the
///   frame, only when its corners are rounded); a frame that shrinks reuses it, unless its corners
///   are rounded: drawn smaller, they would no longer be `cornerRadius` points. So does an image that
///   lands with another aspect than was known, which is drawn at another width.
///
/// Memory: the store keeps its memory tiers until ``ImageStore/clearMemory()``. On iOS, tvOS and
/// visionOS stores that opt in (the default) empty them on a memory warning; on Linux and macOS
/// call `clearMemory()` yourself when the process needs the memory back.
@MainActor
public final class CachedImageModel {
    /// The image's location; `nil` draws nothing and loads nothing.
    public let url: URL?
    /// The image's size as given by the caller (for example, dimensions sent by a server); `nil` when
    /// not known. A size without area (a zero, negative or non-finite side) counts as not known.
    public let intrinsicSize: CGSize?
    /// The corner radius in points as drawn; `0` leaves corners square.
    public let cornerRadius: CGFloat
    /// How the image is drawn in its frame, which decides how wide it is drawn, so how many pixels
    /// it needs.
    public let contentMode: ContentMode
    /// The most pixels wide the image is decoded at, whatever the frame; `nil` means no cap.
    public let maxPixelWidth: CGFloat?
    /// The screen's pixels per point (`2` or `3` on iPhones, `2` on iPads); the laid-out width is multiplied by it.
    public let displayScale: CGFloat
    /// The store that loads and caches the image.
    public let store: ImageStore

    /// The box to reserve before the image arrives: ``intrinsicSize`` when it has a positive, finite
    /// width and height, else the store's cached pixel size, else `nil` (draw a placeholder in a frame
    /// of your own). Use its aspect ratio; it is in pixels when it comes from the store. Set once from
    /// the image's natural size when it was `nil`.
    public internal(set) var reservedSize: CGSize?
    /// The image to draw, or `nil` while the placeholder shows. Once set it is never set back to `nil`;
    /// it is replaced by another decode of the same URL when the frame needs one (a wider frame; with
    /// rounded corners, a narrower one too, or a frame past `maxPixelWidth`; an aspect that turns out
    /// other than was known) and by a local file's new version once a check finds the file changed.
    public internal(set) var image: PlatformImage?
    /// The last laid-out size in points given to ``layoutChanged(to:)`` or the initializer.
    public private(set) var layoutSize: CGSize?
    /// The request most recently asked of the store (from memory or loaded); `nil` until the model
    /// has a laid-out size and something asked for the image. A model that draws the image of the model
    /// it replaces starts with that model's, unless that one had a load in flight.
    public internal(set) var lastRequest: ImageRequest?
    /// Called on the main actor after ``image``, ``reservedSize`` or ``frameCornerRadius`` changes, so a
    /// view can redraw.
    public var onChange: (() -> Void)?

    /// The load in flight: its request, the handle that cancels it and a number telling its
    /// completion apart from that of a load it replaced.
    var loading: (request: ImageRequest, task: ImageLoadTask, id: UInt64)?
    /// The load the model this one replaced had in flight, handed over instead of cancelled: the first
    /// load this model starts replaces it, holding the download they share, and it is cancelled when
    /// this model needs no load after all (memory had the image, or it left the screen first).
    var adoptedLoad: ImageLoadTask?
    var nextLoadID: UInt64 = 0
    /// The request of a local file's image drawn from memory that no check has looked at since:
    /// memory never looks at the file, which may have changed on disk after it was decoded.
    var uncheckedFileRequest: ImageRequest?
    /// The check of a local file's image drawn from memory in flight (see
    /// ``checkFileDrawnFromMemory()``), with a number telling its completion apart from that of a check
    /// it replaced; apart from ``loading``, so it neither shows as loading nor keeps callers of ``load()``
    /// waiting.
    var fileCheck: (task: ImageLoadTask, id: UInt64)?
    /// How many images the model has drawn: a check of the file draws its image only when none was
    /// drawn since it started.
    var drawCount: UInt64 = 0
    /// Whether the store was asked, since the model was last shown, to check a remote image drawn from
    /// memory with its server (see ``revalidateDrawnFromMemory(_:)``).
    var revalidationAsked = false
    /// The callers of ``load()`` still waiting, by number.
    var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    var nextWaiterID: UInt64 = 0
    /// Whether a view shows the image: set by ``load()``, cleared by ``disappear()``. Only an
    /// active model starts loads; an inactive one still takes images from memory.
    var isActive = false
    /// Whether the model's last load failed: it starts no load again until the next ``load()``, so that
    /// a missing or broken image is not asked for again at every layout.
    var lastLoadFailed = false
    /// The widest pixel width the current image serves: its own width; when it came out narrower
    /// than asked (the source is that small), unlimited, or with rounded corners the width asked for
    /// (a wider frame needs corners of fewer source pixels to look the same).
    var coveredPixelWidth = 0
    /// The corner radius of the current image per pixel of its width, as asked for. Drawn over a frame
    /// of another width, its corners keep that proportion, not their size in points.
    var cornerRadiusPerPixel = 0.0
    /// The image's size as far as the model knows it, whose aspect ratio decides the width it is drawn
    /// at in its frame: ``reservedSize`` at first, then the store's size of the image, else the image's
    /// own, once one lands, which may tell an `intrinsicSize` of the wrong shape.
    var naturalSize: CGSize?

    /// Creates a model and, when `layoutSize` is given, takes the image from memory at once if the
    /// store has it.
    ///
    /// - Parameters:
    ///   - url: The image's location; `nil` shows the placeholder.
    ///   - intrinsicSize: The image's size if the caller knows it; `nil` (the default), or a size
    ///     without area, asks the store.
    ///   - cornerRadius: The corner radius in points; `0` by default. Negative and non-finite values
    ///     mean `0`.
    ///   - contentMode: How the image is drawn in its frame; ``ContentMode/fit`` (the frame's width, or
    ///     the narrower one an image taller in aspect than the frame is drawn at) by default.
    ///   - maxPixelWidth: A cap on the decoded width in pixels, at least 1 (a smaller one is 1); `nil`
    ///     (the default) means none.
    ///   - displayScale: Pixels per point; `1` by default.
    ///   - layoutSize: The laid-out size in points if already known; `nil` by default.
    ///   - previous: The model this one replaces on screen, for example one made for the display
    ///     scale before the window moved to another screen; `nil` by default. When it shows the same
    ///     URL from the same store, its image is drawn (and fills in a box not known otherwise) until
    ///     this model's own lands, instead of the placeholder; as when a frame grows, it is replaced
    ///     only when this model needs more pixels or other corners. A load it has in flight is handed
    ///     over to this model, so a download under way goes on rather than starting again: make this
    ///     model before the previous one's ``disappear()``.
    ///   - store: The store to load from; ``ImageStore/shared`` by default.
    public init(
        url: URL?, intrinsicSize: CGSize? = nil, cornerRadius: CGFloat = 0, contentMode: ContentMode = .fit,
        maxPixelWidth: CGFloat? = nil, displayScale: CGFloat = 1, layoutSize: CGSize? = nil,
        replacing previous: CachedImageModel? = nil, store: ImageStore = .shared
    ) {
        self.url = url
        self.intrinsicSize = intrinsicSize
        self.cornerRadius = cornerRadius
        self.contentMode = contentMode
        self.maxPixelWidth = maxPixelWidth
        self.displayScale = displayScale
        self.store = store
        // A server's `0x0` for "unknown" would otherwise be a box of nothing that never changes.
        let knownSize = intrinsicSize.flatMap { size in
            size.width > 0 && size.height > 0 && size.width.isFinite && size.height.isFinite ? size : nil
        }
        reservedSize = knownSize ?? url.flatMap(store.cachedPixelSize(for:))
        naturalSize = reservedSize
        if let previous, previous.store === store, let url, previous.url?.cacheKey == url.cacheKey {
            if let image = previous.image {
                // The width it serves and its corners are the image's, whatever the scale.
                coveredPixelWidth = previous.coveredPixelWidth
                cornerRadiusPerPixel = previous.cornerRadiusPerPixel
                // So is the request it came from (unless a load of another is under way, handed over below,
                // which reads the file anyway): `load()` checks a local file against it, as the previous model
                // would have on its return (the file may have changed while it was away).
                lastRequest = previous.loading == nil ? previous.lastRequest : nil
                draw(image)
            }
            adoptedLoad = previous.handOverLoad()
        }
        if let layoutSize { layoutChanged(to: layoutSize) }
    }

    /// The pixel width the current layout needs; `nil` before the first non-empty layout.
    public var targetPixelWidth: Int? {
        guard let layoutSize else { return nil }
        let width = DisplayPixels.drawnWidth(
            layoutSize: layoutSize, contentMode: contentMode, imageSize: naturalSize, scale: displayScale)
        return DisplayPixels.width(forLayoutWidth: width, scale: displayScale, maxPixelWidth: maxPixelWidth)
    }

    /// The radius in points of the rounded rectangle to clip the frame to, so that its visible corners
    /// are rounded: ``cornerRadius`` when the image is drawn past its frame (``ContentMode/fill`` with an
    /// image of another shape than the frame), which cuts off the corners rounded into its pixels; `0`
    /// when those are the corners that show, so that a plain clip is right and their edges are not
    /// smoothed twice. Never more than half the frame's shorter side. A radius that is not finite is none,
    /// as it is in the pixels (``ImageRequest/cornerPixelRadius``): the frame's clip never rounds corners
    /// the image's own do not have.
    public var frameCornerRadius: CGFloat {
        guard cornerRadius > 0, cornerRadius.isFinite, contentMode == .fill, let layoutSize, let image,
            DisplayPixels.fillOverflows(
                layoutSize: layoutSize, imageSize: image.pixelSize.cgSize, scale: displayScale)
        else { return 0 }
        return min(cornerRadius, min(layoutSize.width, layoutSize.height) / 2)
    }

    /// The request that fits the current layout; `nil` without a URL or a laid-out width.
    public var request: ImageRequest? {
        guard let url, let layoutSize else { return nil }
        return Self.request(
            url: url, layoutSize: layoutSize, cornerRadius: cornerRadius, contentMode: contentMode,
            imageSize: naturalSize, maxPixelWidth: maxPixelWidth, displayScale: displayScale)
    }

    /// The request a model with these parameters makes once laid out at `layoutSize`; `nil` when
    /// the frame has no width. Prefetch with it (``ImageStore/startPrefetching(_:)``) so that a
    /// prefetched image is a memory hit when its row appears. One prefetched before the store knew the
    /// image's size (`imageSize` `nil`) is drawn when its row appears too, but the model, knowing the size
    /// by then, asks again when the image's shape needs other pixels (a `.fill` image wider in aspect than
    /// its frame; rounded corners on a `.fit` one taller): decoded from the prefetched bytes while the store
    /// still has them, in memory or on disk.
    ///
    /// ```swift
    /// store.startPrefetching(upcoming.compactMap {
    ///     CachedImageModel.request(url: $0.url, layoutSize: $0.frame.size, displayScale: 3)
    /// })
    /// ```
    ///
    /// - Parameters:
    ///   - url: The image's location.
    ///   - layoutSize: The frame the image is laid out in, in points.
    ///   - cornerRadius: The corner radius in points; `0` by default.
    ///   - contentMode: How the image is drawn in its frame; ``ContentMode/fit`` by default.
    ///   - imageSize: The image's size as the model knows it before its first image, its
    ///     ``reservedSize``: the `intrinsicSize` when it has a positive, finite width and height, else
    ///     the store's ``ImageStore/cachedPixelSize(for:)`` (pass that, not an `intrinsicSize` of
    ///     `.zero`, or the request differs from the model's and a prefetch misses); only its aspect
    ///     ratio counts. `nil` (the default), as for a model that knows neither, asks
    ///     for the frame's width.
    ///   - maxPixelWidth: A cap on the width in pixels; `nil` (the default) means none.
    ///   - displayScale: Pixels per point; `1` by default.
    public nonisolated static func request(
        url: URL, layoutSize: CGSize, cornerRadius: CGFloat = 0, contentMode: ContentMode = .fit,
        imageSize: CGSize? = nil, maxPixelWidth: CGFloat? = nil, displayScale: CGFloat = 1
    ) -> ImageRequest? {
        let drawnWidth = DisplayPixels.drawnWidth(
            layoutSize: layoutSize, contentMode: contentMode, imageSize: imageSize, scale: displayScale)
        guard
            let width = DisplayPixels.width(
                forLayoutWidth: drawnWidth, scale: displayScale, maxPixelWidth: maxPixelWidth)
        else { return nil }
        let radius = DisplayPixels.cornerRadius(
            cornerRadius, layoutWidth: drawnWidth, scale: displayScale, maxPixelWidth: maxPixelWidth)
        return ImageRequest(url: url, targetWidth: CGFloat(width), cornerRadius: radius)
    }

    /// Whether a load is in flight.
    public var isLoading: Bool { loading != nil }

    /// Records the laid-out size in points. When the frame needs more pixels than the current
    /// image has, or other corners (rounded corners are `cornerRadius` points at any width), takes the
    /// image from memory or, while the model is shown, starts loading it; the current image stays
    /// until it lands. After a load that failed, none starts until the next ``load()``. A frame the
    /// current image covers (a smaller one with square corners) keeps it, and one whose image memory has
    /// draws that: either cancels a load in flight for a frame it no longer has.
    public func layoutChanged(to size: CGSize) {
        let clip = frameCornerRadius
        layoutSize = size
        // A frame of another shape may cut off the image's own corners, or stop cutting them off.
        if frameCornerRadius != clip { onChange?() }
        guard let request, needsImage(for: request) else {
            // The frame went back to one the current image fits: a load for the frame in between would
            // bring pixels it does not need or, with rounded corners, replace it with corners that no
            // longer fit. (`CachedImage` lays a `.fill` image out again in its box once the first image
            // shows its aspect, so the wider load that image started is dropped here.)
            if request != nil { cancelLoad() }
            // Callers of `load()` waiting for this layout (the first one, that found the image of the
            // model this one replaced covering it) have nothing left to wait for either.
            resumeWaitersIfSettled()
            return
        }
        if takeFromMemory(request) { return }
        // A row prefetched before the store knew the image's size was asked for at the frame's width, which a
        // model knowing the size asks for only when the image's shape does not change it: drawn meanwhile, as a
        // previous model's image is, instead of the placeholder, until the image of the width it needs lands.
        if image == nil, adoptedLoad == nil, let prefetched = sizeBlindRequest, prefetched != request,
            takeFromMemory(prefetched)
        {
            return
        }
        startLoadIfNeeded()
    }

    /// The request a model laid out in this frame that knew nothing of the image's size makes: the one
    /// ``request(url:layoutSize:cornerRadius:contentMode:imageSize:maxPixelWidth:displayScale:)`` gives
    /// without an `imageSize`, as a prefetch made before the store had seen the image asked for.
    var sizeBlindRequest: ImageRequest? {
        guard let url, let layoutSize else { return nil }
        return Self.request(
            url: url, layoutSize: layoutSize, cornerRadius: cornerRadius, contentMode: contentMode, imageSize: nil,
            maxPixelWidth: maxPixelWidth, displayScale: displayScale)
    }

    /// Hydrates: takes the image from memory or loads it, and returns once no load is in flight and
    /// the image covers the layout, or the load failed. Waits for a first layout when there is none.
    /// A local file's image drawn from memory, or kept by the model while it was not shown, is drawn at
    /// once, and the store then checks the file in the background: when it changed on disk since it was
    /// decoded, the new decode replaces it. A check that fails (the file deleted, or no longer an image)
    /// leaves the image drawn, as ``image`` is never set back to `nil`, but the store forgets the file's
    /// image, size and bytes: a model made for the URL after that loads it afresh. A remote image drawn that way is checked with its server when
    /// its HTTP caching facts say it is stale, once each time the model is shown: the image drawn stays,
    /// and a changed one replaces it in the store, for the next time the view is shown.
    /// Returns at once, loading nothing, when ``displayScale`` is not a positive number.
    ///
    /// Cancelling the calling task (SwiftUI cancels `.task` on disappear) returns at once and, when
    /// no other call is waiting, stops the store load and the file check as ``disappear()`` does.
    public func load() async {
        // With no positive display scale no layout gives a request: nothing would ever end the wait.
        guard url != nil, DisplayPixels.isUsable(scale: displayScale), !Task.isCancelled else { return }
        let returning = !isActive
        isActive = true
        lastLoadFailed = false
        if returning { revalidationAsked = false }
        if let layoutSize { layoutChanged(to: layoutSize) }
        // Shown again with the image it kept: a local file may have changed on disk while it was away, so it
        // is checked as an image drawn from memory is; a remote one may have gone stale. A load the layout
        // started just now (a frame that grew while away) reads the file too, but is cancelled should the
        // frame shrink back before it lands: the check of its request shares its run, and is made again then.
        // A model that took over the image of one with a load in flight has no request of its own yet when
        // that image covers its frame (the load handed over was dropped): the frame's is checked.
        if returning, image != nil, fileCheck == nil, url?.isLocalFileURL == true {
            uncheckedFileRequest = uncheckedFileRequest ?? lastRequest ?? request
        }
        if returning, image != nil, loading == nil, let url { revalidateDrawnFromMemory(url) }
        checkFileDrawnFromMemory()
        guard !isSettled else { return }
        nextWaiterID += 1
        let waiterID = nextWaiterID
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiters[waiterID] = continuation
            }
        } onCancel: {
            // Runs on the cancelling thread; the waiter is registered before the main actor can
            // take this hop, since registration happens in the same turn as the call.
            Task { @MainActor in self.leave(waiterID) }
        }
    }

    /// Cancels any load in flight and stops starting new ones until the next ``load()``. The image
    /// already shown stays.
    public func disappear() {
        isActive = false
        cancelLoad()
        stopFileCheck()
        resumeWaiters()
    }
}

extension CachedImageModel {
    /// How the image is drawn in its frame.
    public enum ContentMode: Sendable {
        /// Scaled to fit inside the frame, keeping its aspect ratio.
        case fit
        /// Scaled to cover the frame, keeping its aspect ratio; what overflows is clipped.
        case fill
    }
}
