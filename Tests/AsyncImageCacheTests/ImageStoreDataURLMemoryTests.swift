import Foundation
import Testing

@testable import AsyncImageCache

/// A `data:` URL is its own payload, and the memory tiers key their entries by the URL: those keys
/// count in the budgets (of originals, of variants, of the size memo), or forty 120 KB images inline
/// would hold megabytes the budgets never see.
@Suite struct ImageStoreDataURLMemoryTests {
    /// A PNG of noise, which compresses to about 3 bytes a pixel, inline in a `data:` URL.
    private func noiseDataURL(side: Int, seed: UInt64) throws -> URL {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        let pixels = (0..<(side * side * 4)).map { index -> UInt8 in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return index % 4 == 3 ? 255 : UInt8(truncatingIfNeeded: state)
        }
        let png = try ImageEncoders.PNG().encode(Bitmap(width: side, height: side, pixels: pixels))
        return try #require(URL(string: "data:image/png;base64," + png.base64EncodedString()))
    }

    @Test func theKeysOfLargeDataURLsCountInTheMemoryBudgetAndTheSizeMemo() async throws {
        let folder = TemporaryDirectory("data-url-memory")
        let budget = 1 << 20
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.memoryByteLimit = budget }
        var keyBytes = 0
        for seed in 0..<40 {
            let url = try noiseDataURL(side: 200, seed: UInt64(seed))
            keyBytes += url.cacheKey.utf8.count
            #expect(try await store.image(for: ImageRequest(url: url, targetWidth: 16)).pixelSize.width == 16)
            #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
        }
        #expect(keyBytes > 7 * budget)  // the URLs alone are far over the budget
        let memoKeys = store.sizeMemo.keysByRecency.reduce(0) { $0 + $1.utf8.count }
        #expect(memoKeys <= ImageStore.sizeMemoKeyByteLimit, "the size memo holds \(memoKeys) bytes of keys")
        let originals = store.originals.keysByRecency.reduce(0) { total, key in
            total + key.utf8.count + (store.originals.value(forKey: key)?.data.count ?? 0)
        }
        #expect(originals <= budget, "the originals hold \(originals) bytes with their keys, over \(budget)")
        // The variants are 16 px wide, a kilobyte of pixels each: their keys are what fills the budget.
        let variants = store.variants.keysByRecency.reduce(0) { $0 + $1.url.cacheKey.utf8.count + 16 * 16 * 4 }
        #expect(variants <= budget, "the variants hold \(variants) bytes with their keys, over \(budget)")
        #expect(store.variants.totalCost == variants)
    }
}
