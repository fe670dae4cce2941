import Foundation
import Testing

@testable import AsyncImageCache

/// Long random runs of the memory tiers' structures, each step checked against a plain model: a list in
/// recency order for the LRU, and what a request may be served for the variants.
@Suite(.ownThreads) struct MemoryTierModelTests {
    @Test(arguments: 1...8)
    func theLRUEvictsAndOrdersAsAPlainListWould(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed))
        let countLimit = Int.random(in: 1...6, using: &random)
        let costLimit = Int.random(in: 0..<40, using: &random)
        checkAgainstModel(
            &random, countLimit: countLimit, costLimit: costLimit, keys: 10, steps: 3000, largestCost: 15
        ) { $0 }
    }

    /// Hundreds of entries, mostly reads: the log of uses is compacted many times over, the table grows,
    /// and entries leave from anywhere in long probe runs.
    @Test(arguments: 1...4)
    func aLargerLRUStillOrdersAsAPlainListWould(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed) &* 7919)
        let countLimit = Int.random(in: 100...300, using: &random)
        checkAgainstModel(
            &random, countLimit: countLimit, costLimit: .max / 2, keys: 2 * countLimit, steps: 12_000,
            largestCost: 1000, reads: 6
        ) { $0 }
    }

    /// Keys whose hashes take only 3 values: every lookup compares keys along one long run of the table,
    /// and each removal closes its gap by moving back entries that share its home bucket.
    @Test(arguments: 1...4)
    func anLRUOfCollidingKeysStillOrdersAsAPlainListWould(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed) &* 104_729)
        let countLimit = Int.random(in: 5...60, using: &random)
        checkAgainstModel(
            &random, countLimit: countLimit, costLimit: .max / 2, keys: 80, steps: 6000, largestCost: 10,
            key: CollidingKey.init)
    }

    /// A key hashed by its number modulo 3.
    private struct CollidingKey: Hashable {
        let number: Int
        func hash(into hasher: inout Hasher) { hasher.combine(number % 3) }
    }

    /// Runs `steps` random inserts, reads and removals (about 2 : `reads` : 1) of `keys` keys, made by `key`,
    /// on an LRU with these limits, and checks after each step its values, costs and order against a plain
    /// list in recency order.
    private func checkAgainstModel<Key: Hashable>(
        _ random: inout SeededGenerator, countLimit: Int, costLimit: Int, keys: Int, steps: Int,
        largestCost: Int, reads: Int = 1, key: (Int) -> Key
    ) {
        var lru = LRUStorage<Key, Int>(countLimit: countLimit, costLimit: costLimit)
        // The model: keys from least to most recently used, and each key's value and cost.
        var order: [Key] = []
        var entries: [Key: (value: Int, cost: Int)] = [:]
        var modelCost = 0
        func forget(_ key: Key) {
            order.removeAll { $0 == key }
            modelCost -= entries.removeValue(forKey: key)?.cost ?? 0
        }
        for step in 0..<steps {
            let key = key(Int.random(in: 0..<keys, using: &random))
            let operation = Int.random(in: 0..<(reads + 3), using: &random)
            if operation < 2 {
                let cost = Int.random(in: 0..<largestCost, using: &random)
                _ = lru.insert(step, forKey: key, cost: cost) { $1 }
                forget(key)
                // An entry over the whole budget is refused; otherwise the least recent go until it fits.
                if cost <= costLimit {
                    while !order.isEmpty, order.count >= countLimit || modelCost > costLimit - cost {
                        forget(order[0])
                    }
                    order.append(key)
                    entries[key] = (step, cost)
                    modelCost += cost
                }
            } else if operation < reads + 2 {
                #expect(lru.value(forKey: key, markingUsed: true) == entries[key]?.value, "step \(step)")
                if entries[key] != nil {
                    order.removeAll { $0 == key }
                    order.append(key)
                }
            } else {
                #expect(lru.removeValue(forKey: key) == entries[key]?.value, "step \(step)")
                forget(key)
            }
            #expect(lru.totalCost == modelCost, "step \(step)")
            #expect(lru.count == order.count && lru.count <= countLimit && lru.totalCost <= costLimit, "step \(step)")
            guard lru.keysFromLeastRecent() == order else {
                Issue.record("step \(step): \(lru.keysFromLeastRecent()) in the LRU, \(order) in the model")
                return
            }
        }
    }

    /// Whatever the mix of inserts, removals and lookups, a hit is of the same URL, at least as wide as
    /// the request needs (never a smaller decode for a larger request), with corners that look the same
    /// at the requested width (within half a pixel), and the budgets hold.
    @Test(arguments: 1...12)
    func theVariantsServeOnlyWhatLooksLikeTheRequest(seed: Int) {
        var random = SeededGenerator(seed: UInt64(seed) &* 977)
        let sources = [
            (URL(string: "https://example.com/0.jpg")!, PixelSize(width: 40, height: 30)),
            (URL(string: "https://example.com/1.jpg")!, PixelSize(width: 64, height: 64)),
            (URL(string: "https://example.com/2.jpg")!, PixelSize(width: 25, height: 50)),
        ]
        let countLimit = Int.random(in: 2..<8, using: &random)
        let costLimit = Int.random(in: 2000..<22_000, using: &random)
        let cache = VariantCache(countLimit: countLimit, costLimit: costLimit)
        for step in 0..<4000 {
            let (url, natural) = sources[Int.random(in: 0..<sources.count, using: &random)]
            let width: CGFloat? =
                Int.random(in: 0..<5, using: &random) == 0 ? nil : CGFloat(Int.random(in: 1...80, using: &random))
            let radius = CGFloat(
                Int.random(in: 0..<4, using: &random) == 0 ? 0 : Int.random(in: 0..<12, using: &random))
            let request = ImageRequest(url: url, targetWidth: width, cornerRadius: radius)
            if Bool.random(using: &random) {
                cache.insert(Self.prepared(request, natural: natural), for: request)
            } else if Int.random(in: 0..<20, using: &random) == 0 {
                cache.removeVariants(of: url)
            } else if let hit = cache.value(for: request) {
                let wanted = (
                    width: min(request.targetPixelWidth ?? natural.width, natural.width),
                    radius: request.cornerPixelRadius(atNaturalWidth: natural.width)
                )
                // Corners are cut with the radius clamped to half the shorter side: that of the hit, scaled to
                // the wanted width, against that of the image the request makes (the source's aspect, rounded).
                let hitSize = hit.pixelSize
                let hitCorners = min(Double(hit.cornerPixelRadius), Double(min(hitSize.width, hitSize.height)) / 2)
                let radiusAtWantedWidth = hitCorners * Double(wanted.width) / Double(hitSize.width)
                let wantedHeight = max(
                    1, (Double(natural.height) * Double(wanted.width) / Double(natural.width)).rounded())
                let wantedCorners = min(Double(wanted.radius), min(Double(wanted.width), wantedHeight) / 2)
                let looksTheSame =
                    hit.request.url == url && hitSize.width >= wanted.width
                    && (wanted.radius == 0) == (hit.cornerPixelRadius == 0)
                    && abs(radiusAtWantedWidth - wantedCorners) <= 0.5
                guard looksTheSame else {
                    Issue.record(
                        "step \(step): \(hit.request) (\(hit.pixelSize.width) px, r=\(hit.cornerPixelRadius)) served \(request)"
                    )
                    return
                }
            }
            #expect(cache.count <= countLimit && cache.totalCost <= costLimit, "step \(step)")
        }
    }

    /// A variant prepared for `request` from a source `natural` pixels wide: its width is the request's,
    /// never more than the source's.
    static func prepared(_ request: ImageRequest, natural: PixelSize) -> PreparedImage {
        let width = min(request.targetPixelWidth ?? natural.width, natural.width)
        let height = max(1, Int((Double(natural.height) * Double(width) / Double(natural.width)).rounded()))
        let bitmap = Bitmap(width: width, height: height, pixels: [UInt8](repeating: 0, count: width * height * 4))
        return PreparedImage(bitmap, request: request, naturalSize: natural, fileStamp: nil)
    }
}
