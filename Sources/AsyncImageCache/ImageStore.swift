import Foundation

/// The image store: a two-tier cache that loads, decodes at display size and hands out images
/// without blocking the caller.
///
/// ```swift
/// let store = ImageStore.shared
/// // During layout: reserve the box now, even on the first frame after a relaunch.
/// let size = store.cachedPixelSize(for: url)
/// // Then hydrate; the completion runs on the main thread.
/// store.load(ImageRequest(url: url, targetWidth: 840, cornerRadius: 10)) { image in
///     imageView.image = image
/// }
/// // Or from async code, with a typed error:
/// let image = try await store.image(for: ImageRequest(url: url, targetWidth: 320))
/// ```
///
/// ## The flow of one request
/// ```
/// load(request)
///   -> memory variants [ImageRequest -> image]            hit: done
///   -> in-flight table: one run per request, one fetch per URL; a run is cancelled when its
///      last waiter leaves
///   -> original bytes: memory originals [URL -> bytes + header]
///                      -> disk (remote URLs: hashed file + pixel-size attribute)
///                      -> source (data:, file:, http(s))
///   -> decode at the smallest scale that covers the target, off the main thread
///   -> resize to the quantized width and orient (EXIF; on Linux a JPEG or a sequential PNG is resized
///      as stored, then turned), round the corners
///   -> store: the variant in memory; the original in memory and, for remote URLs, on disk
///   -> deliver to every waiter (completion handlers on the main thread)
/// ```
/// ``cachedPixelSize(for:)`` takes its own short path and never decodes pixels: size memo -> memory
/// originals -> the file's extended attribute -> the file's header (the attribute, when missing, is
/// written back on the disk queue afterwards).
///
/// Nothing is written to either tier until the bytes have decoded, so a failed load leaves no
/// trace. Synchronous reads never wait for a load: ``cachedImage(for:)`` takes a lock for a dictionary
/// lookup; ``cachedPixelSize(for:)`` may read a file's attribute or header, and
/// ``cachedOriginalBytes(for:)`` a whole file of the disk tier, when memory misses.
///
/// On Linux, ``load(_:completion:)`` delivers through the main actor, which runs on the main
/// thread only while the main run loop runs: a command-line program calls `RunLoop.main.run()`
/// (or awaits ``image(for:)`` instead). `dispatchMain()` also drains the main queue, but on
/// another thread.
public final class ImageStore: Sendable {
    /// The store most apps use: named `"default"`, with default budgets.
    public static let shared = ImageStore()

    /// The store's configuration, as given at creation.
    public let configuration: Configuration

    let variants: VariantCache
    // Originals, sizes and fetches are keyed by `URL.cacheKey`, the absolute string: hashing and
    // comparing `URL` values costs several times more, and the string is what names the disk file.
    // A `data:` URL's key is its whole payload: it costs its bytes in both (see ``keepOriginal(_:forKey:)``
    // and ``memoize(_:forKey:)``).
    let originals: MemoryCache<String, OriginalImage>
    let sizeMemo: MemoryCache<String, PixelSize>
    /// The disk tier. Its folder is made by the first write; where that fails, writes fail quietly
    /// and the store works from memory and sources alone.
    let disk: DiskStore
    /// The runs of the pipeline in flight, by request, and the fetches, by `URL.cacheKey`: both under the
    /// counts (``RunKey``) that keep a load from sharing work begun before a `removeAll()` or a replacement.
    let variantRuns = InFlightTable<RunKey<ImageRequest>, PreparedImage>()
    let fetchRuns = InFlightTable<RunKey<String>, FetchedOriginal>()
    /// Originals fetched and not yet decoded (nor kept), by URL: a load of another width meanwhile
    /// takes them from here instead of fetching again. One entry per run that holds them.
    let decodingOriginals = LockedBox([String: [FetchedOriginal]]())
    /// Downloads whose decode was stopped before it finished (every waiter left), by URL: the next
    /// load decodes them instead of fetching again, and only then are they kept in the tiers, as any
    /// download is once it has decoded. A few (``heldDownloadCountLimit``), and at most a quarter of the
    /// memory budget.
    let undecodedOriginals: MemoryCache<String, FetchedOriginal>
    /// The most downloads ``undecodedOriginals`` holds, whatever ``Configuration-swift.struct/memoryCountLimit``:
    /// that limit bounds the tiers, and a store that keeps none in memory (a limit of 0) would drop every
    /// download cancelled before it decoded, which never reached the disk tier either, and fetch it again.
    static let heldDownloadCountLimit = 32
    /// How many times each URL's image has been replaced, by a revalidation that found changed bytes or
    /// by ``removeImage(for:)``. Raised only inside ``DiskStore/ifCurrent(_:_:)``, where a load also
    /// checks it and keeps its result: bytes looked up before a replacement are never kept after it.
    /// Shared with the other stores of this process on the folder (``DiskStore/replacements``), as the
    /// generation is.
    var replacements: LockedBox<ReplacementLedger> { disk.replacements }
    /// The version of each local file that a load last read (`nil`: the file was gone), by URL. Written and
    /// checked under the disk tier's generation lock, as memory is emptied: a load keeps what it read only
    /// while it is that version, so the decode of an older version landing after a load of the new one
    /// keeps nothing. Each costs its key's bytes (``recordVersion(_:forKey:)``): a `file:` URL's key is its
    /// whole string, a query included, bounded as the size memo's keys are. A URL forgotten past the limits
    /// keeps what its loads read, as before any was seen.
    let localFileVersions = MemoryCache<String, FileStamp?>(
        countLimit: 10_000, costLimit: ImageStore.sizeMemoKeyByteLimit)
    let counters = LockedBox(Statistics())
    let decodeSlots: DecodeSlots
    /// The visible loads of one source (a host, or the local files) that may be past the start of their
    /// fetch and short of a decode slot at once, ``loadsAhead(ofDecodeSlots:)``: fetching, or holding
    /// fetched bytes while they wait for a slot. The others wait to start, so a burst of hundreds of loads
    /// holds the bytes of only a few images, not of every one fetched faster than the decodes drain them;
    /// a host that does not answer holds up only its own loads (counted under the host they fetch from: a
    /// redirect to another host moves a load's slot there, ``FetchSlotHold``; a load whose bytes are in the
    /// disk tier asks no host and counts under the disk tier's set). Prefetches do not take these
    /// (``prefetchConcurrency`` bounds them already, per source), so a visible load never waits behind one
    /// here.
    let fetchSlots: FetchSlots
    /// HTTP caching facts of remote entries, read from disk attributes at most once per URL (and again
    /// once evicted: an entry in memory without a file then counts as stale, see
    /// ``storedCacheMetadata(for:)``), each costing ``HTTPCacheMetadata/memoryCost(forKey:)``.
    let cacheMetadata = MemoryCache<String, HTTPCacheMetadata>(
        countLimit: 10_000, costLimit: ImageStore.cacheMetadataByteLimit)
    /// The most bytes the caching facts kept in memory take: 10,000 entries with common validators
    /// (an entity tag of 40 bytes, a date of 29) take about 2.5 MB, under it.
    static let cacheMetadataByteLimit = 8 << 20
    /// The URLs being revalidated now: at most ``revalidationLimit`` of each host, and
    /// ``revalidationTotalLimit`` in all.
    let revalidating = LockedBox(Revalidations())
    /// The most background revalidations a store runs at once of one host. Each waits for a connection to
    /// its host (without a timeout until it has one) and holds its validators meanwhile: without a limit, a
    /// host that answers downloads but not revalidations made a store hold one check per stale image shown,
    /// as many as its tiers hold. More than a screen of images, so that those shown together are all checked.
    /// Per host, so that a host that does not answer holds up only its own checks.
    static let revalidationLimit = 64
    /// The most background revalidations a store runs at once, every host's: ``revalidationLimit`` for each
    /// of ``prefetchSourcesAtOnce`` hosts.
    static let revalidationTotalLimit = revalidationLimit * prefetchSourcesAtOnce
    let prefetches = LockedBox(PrefetchTable())

    /// Creates a store with the given name and budgets and the default parts.
    ///
    /// - Parameters:
    ///   - name: The store's folder name, under `AsyncImageCache` in the user's cache folder; `"default"`
    ///     by default.
    ///     It must be a plain name, not a path: see ``Configuration/name``. An invalid name stops the
    ///     program; use ``init(configuration:)`` to get an error instead.
    ///   - memoryCountLimit: The most entries in each memory tier; 150 by default.
    ///   - memoryByteLimit: The most bytes in each memory tier; by default scaled to the memory the
    ///     process may use (see ``recommendedMemoryByteLimit()``).
    ///   - diskByteLimit: The disk tier's budget in bytes of space on disk; 200 MiB by default (see
    ///     ``Configuration-swift.struct/diskByteLimit``).
    public convenience init(
        name: String = "default", memoryCountLimit: Int = 150,
        memoryByteLimit: Int = ImageStore.recommendedMemoryByteLimit(), diskByteLimit: Int = 200 * 1024 * 1024
    ) {
        var configuration = Configuration(name: name)
        configuration.memoryCountLimit = memoryCountLimit
        configuration.memoryByteLimit = memoryByteLimit
        configuration.diskByteLimit = diskByteLimit
        do {
            try Self.validate(name: name)
        } catch {
            preconditionFailure(error.description)
        }
        try! self.init(configuration: configuration)  // the only error, a bad name, was ruled out above
    }

    /// Creates a store from a configuration.
    ///
    /// - Throws: ``ConfigurationError/invalidName(_:)`` when the name is not a plain folder name, and
    ///   ``ConfigurationError/invalidPixelBudget(_:)`` when the pixel budget is below 1. A cache folder
    ///   that cannot be created is not an error: its first write makes the folder, and where that fails
    ///   the store keeps its images in memory only. Budgets and limits other than the pixel budget are
    ///   clamped: a count, byte or disk limit of 0 or less keeps nothing in its tier, and a decode
    ///   concurrency of 0 or less means 1. A count limit of 0 still lets a download whose load was
    ///   cancelled be held for the next load (see ``ImageLoadTask/cancel()``); a byte limit of 0 does not.
    public init(configuration: Configuration) throws(ConfigurationError) {
        try Self.validate(name: configuration.name)
        guard configuration.pixelBudget >= 1 else { throw .invalidPixelBudget(configuration.pixelBudget) }
        self.configuration = configuration
        variants = VariantCache(countLimit: configuration.memoryCountLimit, costLimit: configuration.memoryByteLimit)
        decodeSlots = DecodeSlots(limit: configuration.decodeConcurrency)
        fetchSlots = FetchSlots(limit: Self.loadsAhead(ofDecodeSlots: decodeSlots.limit))
        originals = MemoryCache(countLimit: configuration.memoryCountLimit, costLimit: configuration.memoryByteLimit)
        undecodedOriginals = MemoryCache(
            countLimit: Self.heldDownloadCountLimit, costLimit: configuration.memoryByteLimit / 4)
        sizeMemo = MemoryCache(countLimit: 10_000, costLimit: Self.sizeMemoKeyByteLimit)
        disk = DiskStore(
            directory: configuration.directory, byteLimit: configuration.diskByteLimit,
            attributes: configuration.extendedAttributes)
        registerForMemoryWarnings()
    }

    /// The store's name.
    public var name: String { configuration.name }

    /// The folder that holds the disk tier's files.
    public var directory: URL { configuration.directory }

    /// A per-tier memory budget in bytes scaled to the memory the process may use: a sixteenth of it,
    /// clamped to 32...192 MiB on iOS, tvOS and visionOS (where the system also purges memory under
    /// pressure) and to 64...512 MiB on macOS and Linux, and never more than an eighth of it.
    ///
    /// The memory the process may use is the machine's physical memory or, on Linux, the memory limit
    /// of the process's control groups (a container's or a systemd unit's) where that is lower, read
    /// at each call. `ProcessInfo.physicalMemory` reports the host's memory inside a container.
    public static func recommendedMemoryByteLimit() -> Int {
        recommendedMemoryByteLimit(usableMemory: usableMemoryBytes())
    }

    /// ``recommendedMemoryByteLimit()`` for a process that may use `usableMemory` bytes.
    static func recommendedMemoryByteLimit(usableMemory: UInt64) -> Int {
        let usable = Int(clamping: usableMemory)
        let mebibyte = 1024 * 1024
        #if os(iOS) || os(tvOS) || os(visionOS) || os(watchOS)
        let clamped = min(max(usable / 16, 32 * mebibyte), 192 * mebibyte)
        #else
        let clamped = min(max(usable / 16, 64 * mebibyte), 512 * mebibyte)
        #endif
        // The floor must not take a small container's memory: two tiers of 64 MiB are half of 256 MiB.
        return min(clamped, max(usable / 8, 1))
    }

    /// The most pixels one decoded bitmap may have, scaled to the memory the process may use (as for
    /// ``recommendedMemoryByteLimit()``): a sixteenth of its bytes, so that the RGBA bitmap takes at
    /// most a quarter of it, capped at ``ImageDecodingContext/defaultPixelBudget`` (64 megapixels) and
    /// never under 1 megapixel.
    ///
    /// A process that may use 1 GiB or more gets the full 64 megapixels. In a container limited to
    /// 256 MiB it is 16 megapixels: a 64 MiB bitmap, where 64 megapixels would be all of the memory
    /// and the kernel would end the process in the middle of one decode.
    public static func recommendedPixelBudget() -> Int {
        recommendedPixelBudget(usableMemory: usableMemoryBytes())
    }

    /// ``recommendedPixelBudget()`` for a process that may use `usableMemory` bytes.
    static func recommendedPixelBudget(usableMemory: UInt64) -> Int {
        let pixels = Int(clamping: usableMemory / 16)
        return min(max(pixels, 1 << 20), ImageDecodingContext.defaultPixelBudget)
    }

    /// The bytes of memory this process may use: physical memory, lowered on Linux to the control
    /// groups' limit.
    static func usableMemoryBytes() -> UInt64 {
        let physical = ProcessInfo.processInfo.physicalMemory
        #if os(Linux) || os(Android)
        if let limit = ControlGroupMemoryLimit.bytes(), limit < physical { return limit }
        #endif
        return physical
    }

    func report(_ stage: Stage, _ url: URL) {
        configuration.stageObserver?(stage, url)
    }
}

extension ImageStore {
    /// The most bytes of keys the size memo holds: far more than 10,000 web URLs take, and a few
    /// `data:` URLs, whose key is their whole payload.
    static let sizeMemoKeyByteLimit = 4 << 20

    /// Keeps `original` in the memory tier of originals under `key`, costing its bytes (and a `data:`
    /// URL's key, a second copy of them: see ``payloadCost(ofKey:)``).
    func keepOriginal(_ original: OriginalImage, forKey key: String) {
        originals.insert(original, forKey: key, cost: original.data.count + Self.payloadCost(ofKey: key))
    }

    /// What the key of an original costs beside its bytes: a `data:` URL's key is the image once more
    /// (in base64 or percent-encoded), so it counts; a web or file URL's few dozen bytes do not, and
    /// such originals cost exactly their byte count.
    static func payloadCost(ofKey key: String) -> Int {
        key.hasPrefix("data:") ? key.utf8.count : 0
    }

    /// Records `stamp` (`nil`: the file was gone) as the version of the local file with cache key `key`
    /// that a load last read, costing the key's bytes (``localFileVersions``).
    func recordVersion(_ stamp: FileStamp?, forKey key: String) {
        localFileVersions.insert(stamp, forKey: key, cost: key.utf8.count)
    }

    /// Remembers `size` under `key` in the size memo, costing the key's bytes.
    func memoize(_ size: PixelSize, forKey key: String) {
        sizeMemo.insert(size, forKey: key, cost: key.utf8.count)
    }
}
