import Foundation

/// The memory tier of ready-to-draw variants: an LRU bounded by count and bytes, plus an index of
/// the variants of each URL so that one decode can serve smaller frames. A variant costs its pixels'
/// bytes (`width * height * 4`), and for a `data:` URL its key's bytes too.
///
/// A cached variant serves a request for the same URL when it is at least as wide and looks the
/// same once drawn at the requested width: no rounded corners on either, or corners whose radius
/// scales to the requested one (a 640 px image with 20 px corners, drawn at 320 px, has 10 px
/// corners). A smaller variant never serves a larger request, but a variant at the source's natural
/// size serves every request at least as wide (the source is never scaled up, so those requests
/// would prepare the same image). When a variant lands, the smaller ones it can serve are dropped:
/// one decode per look and URL, the largest. A smaller one landing after a larger that serves it is not kept.
/// The variants of a remote URL are of one response: one decoded from other bytes drops the URL's others.
final class VariantCache: @unchecked Sendable {
    // `storage` and `variantsByURL` are only touched while holding `lock`, and change together.
    private let lock = NSLock()
    private var storage: LRUStorage<ImageRequest, PreparedImage>
    private var variantsByURL: [String: Set<ImageRequest>] = [:]

    init(countLimit: Int, costLimit: Int) {
        storage = LRUStorage(countLimit: max(0, countLimit), costLimit: max(0, costLimit))
    }

    /// The exact variant for `request`, else the smallest cached one that serves it.
    func value(for request: ImageRequest) -> PreparedImage? {
        lock.withLock {
            if let exact = storage.value(forKey: request, markingUsed: true) { return exact }
            guard let candidates = variantsByURL[request.url.cacheKey] else { return nil }
            var best: (request: ImageRequest, image: PreparedImage)?
            for candidate in candidates {
                guard let image = storage.value(forKey: candidate, markingUsed: false), image.serves(request) else {
                    continue
                }
                if best == nil || image.pixelSize.width < best!.image.pixelSize.width { best = (candidate, image) }
            }
            guard let best else { return nil }
            _ = storage.value(forKey: best.request, markingUsed: true)
            return best.image
        }
    }

    /// Stores `image` for `request`, dropping the smaller variants of the URL that it serves, and those of a
    /// remote URL decoded from other bytes (another response: ``PreparedImage/sourceDigest``), even when it
    /// is not kept itself. An image that cannot fit the limits at all is not kept, and the smaller ones stay;
    /// nor is one that a variant of the same version of the source already serves (a smaller decode that
    /// lands after a larger one), which would only take the larger one's room.
    func insert(_ image: PreparedImage, for request: ImageRequest) {
        var released: [PreparedImage] = []
        lock.withLock {
            let key = request.url.cacheKey
            for other in variantsByURL[key] ?? [] where other != request {
                guard let existing = storage.value(forKey: other, markingUsed: false),
                    existing.pixelSize.width >= image.pixelSize.width, existing.fileStamp == image.fileStamp,
                    existing.sourceDigest == image.sourceDigest, existing.serves(request)
                else { continue }
                _ = storage.value(forKey: other, markingUsed: true)
                return
            }
            // A `data:` URL's key is its payload, held by the entry beside the pixels: it counts too.
            let cost = image.cost + ImageStore.payloadCost(ofKey: key)
            // The storage refuses it (below) when it alone is over the budget: the ones it serves stay then.
            let fits = cost <= storage.costLimit && storage.countLimit > 0
            for other in variantsByURL[key] ?? [] where other != request {
                guard let existing = storage.value(forKey: other, markingUsed: false),
                    (fits && image.pixelSize.width >= existing.pixelSize.width && image.serves(other))
                        || existing.isOfAnotherResponse(than: image)
                else { continue }
                if let value = storage.removeValue(forKey: other) { released.append(value) }
                variantsByURL[key]?.remove(other)
            }
            variantsByURL[key, default: []].insert(request)
            for (gone, value) in storage.insert(image, forKey: request, cost: cost, left: { ($0, $1) }) {
                released.append(value)
                guard gone != request || storage.value(forKey: request, markingUsed: false) == nil else { continue }
                let goneKey = gone.url.cacheKey
                variantsByURL[goneKey]?.remove(gone)
                if variantsByURL[goneKey]?.isEmpty == true { variantsByURL[goneKey] = nil }
            }
        }
        _ = released  // images are released outside the lock
    }

    /// The digest of the bytes the images kept of `url` were decoded from (``PreparedImage/sourceDigest``; for a
    /// remote URL they are all of one response), without marking any used; `nil` when none is kept, or they
    /// carry none.
    func sourceDigest(of url: URL) -> Int? {
        lock.withLock {
            for request in variantsByURL[url.cacheKey] ?? [] {
                if let digest = storage.value(forKey: request, markingUsed: false)?.sourceDigest { return digest }
            }
            return nil
        }
    }

    /// Removes every variant of `url`, or only those `isRemoved` picks.
    func removeVariants(of url: URL, where isRemoved: (PreparedImage) -> Bool = { _ in true }) {
        var released: [PreparedImage] = []
        lock.withLock {
            let key = url.cacheKey
            for request in variantsByURL[key] ?? [] {
                if let kept = storage.value(forKey: request, markingUsed: false), !isRemoved(kept) { continue }
                if let value = storage.removeValue(forKey: request) { released.append(value) }
                variantsByURL[key]?.remove(request)
            }
            if variantsByURL[key]?.isEmpty == true { variantsByURL[key] = nil }
        }
        _ = released
    }

    /// Removes every variant.
    func removeAll() {
        // The old images are released when `old` goes, outside the lock.
        let old = lock.withLock {
            let old = storage
            storage = LRUStorage(countLimit: old.countLimit, costLimit: old.costLimit)
            variantsByURL = [:]
            return old
        }
        _ = old
    }

    var count: Int { lock.withLock { storage.count } }
    var totalCost: Int { lock.withLock { storage.totalCost } }
    var keysByRecency: [ImageRequest] { lock.withLock { storage.keysFromLeastRecent() } }
}

extension PreparedImage {
    /// Whether both are of a remote URL and were decoded from different bytes (another response).
    func isOfAnotherResponse(than other: PreparedImage) -> Bool {
        guard let digest = sourceDigest, let otherDigest = other.sourceDigest else { return false }
        return digest != otherDigest
    }

    /// Whether this image, drawn at `request`'s width, looks like what `request` asks for.
    func serves(_ request: ImageRequest) -> Bool {
        if request == self.request { return true }
        guard let width = request.targetPixelWidth, width < pixelSize.width || !isNaturalSize else {
            // The source's own size, which `request` asks for (with no width, or one at least as wide,
            // as the source is never scaled up): served when the corners come out the same too.
            return isNaturalSize
                && corners(drawnAt: pixelSize.width, match: request.cornerPixelRadius(atNaturalWidth: pixelSize.width))
        }
        // A smaller variant never serves a larger request.
        guard width <= pixelSize.width else { return false }
        return corners(drawnAt: width, match: request.cornerPixelRadius)
    }

    /// Whether this image's corners, drawn `width` pixels wide, come out within half a pixel of corners
    /// `wanted` pixels round on the image the store makes at that width (the source's aspect, its height
    /// rounded). Each radius is first clamped to half its image's shorter side, as corners are cut
    /// (``Bitmap/cutRadius(_:width:height:)``): past it any radius gives the same round ends, so a circle
    /// asked for with a radius "large enough" serves that radius at every smaller width. No corners match
    /// only no corners.
    func corners(drawnAt width: Int, match wanted: Int) -> Bool {
        if cornerPixelRadius == 0 || wanted == 0 { return cornerPixelRadius == wanted }
        let own = Bitmap.cutRadius(
            Double(cornerPixelRadius), width: Double(pixelSize.width), height: Double(pixelSize.height))
        let asked = Bitmap.cutRadius(
            Double(wanted), width: Double(width), height: Double(naturalSize.height(atWidth: width)))
        return abs(own * Double(width) / Double(pixelSize.width) - asked) <= 0.5
    }
}
