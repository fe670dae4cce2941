import Foundation
import Testing

@testable import AsyncImageCache

/// A replacement of one URL's image (`removeImage(for:)`, or a revalidation that finds new bytes) raises
/// that URL's count only: loads of every other URL keep what they fetch and share one download.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreReplacementLedgerTests {
    /// 2,000 other URLs removed while one load is held: with counts shared among a few hundred URLs, one
    /// of them would raise the held load's count too (on the old 256 stripes, all but certainly).
    @Test func removingOtherImagesNeverDisturbsALoadInFlight() async throws {
        let folder = TemporaryDirectory("replacement-others")
        let loader = GatedLoader(bytes: try SampleImages.jpeg(width: 64, height: 48))
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let request = ImageRequest(url: url, targetWidth: 32)
        let first = Task { try await store.image(for: request) }
        try await waitUntil { loader.hasStarted }
        for index in 0..<2_000 {
            store.removeImage(for: URL(string: "https://images.example.com/others/\(index).jpg")!)
        }
        let second = Task { try await store.image(for: request) }
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 2 }
        loader.open()
        #expect(try await first.value.pixelSize.width == 32)
        #expect(try await second.value.pixelSize.width == 32)
        #expect(loader.loadCount == 1, "the second load downloaded again")
        store.waitForDiskMaintenance()
        #expect(store.cachedImage(for: request) != nil, "the load kept nothing in memory")
        #expect(store.cachedOriginalBytes(for: url) != nil)
        #expect(store.diskFileNames.count == 1, "the load kept nothing on disk")
    }

    /// The counts the ledger keeps on their own are bounded in the bytes of their keys, not only in number:
    /// a URL may be as long as a signed query makes it, and 4,096 of 64 KB would be 256 MB.
    @Test func removingImagesOfLongURLsKeepsTheirCountsWithinTheKeyByteLimit() throws {
        let folder = TemporaryDirectory("replacement-long-keys")
        let store = try ImageStore.makeForTesting(root: folder.url)
        let query = String(repeating: "q", count: 64 * 1024)
        let urls = (0..<200).map { URL(string: "https://images.example.com/\($0).jpg?" + query)! }
        for url in urls { store.removeImage(for: url) }
        let keyBytes = urls[0].cacheKey.utf8.count
        let kept = store.replacements.withLock { $0.trackedCount } * keyBytes
        #expect(kept <= 4 << 20, "the ledger keeps counts for \(kept) bytes of keys")
        #expect(kept > 1 << 20)
        // Each, forgotten or not, still counts above 0, what a load read before its removal.
        #expect(urls.allSatisfy { store.replacementCount(of: $0) > 0 })
    }

    /// The same promises when keys of every length are forgotten for their bytes, one longer than the whole
    /// byte limit among them: counts never go back and rise at each replacement, and the keys kept stay
    /// within the limit (or are that one key alone).
    @Test func countsForgottenForTheBytesOfTheirKeysNeverGoBack() {
        var ledger = ReplacementLedger(limit: 1000, byteLimit: 2000)
        let keys =
            (0..<120).map { "https://images.example.com/\($0)?" + String(repeating: "q", count: $0 * 7) }
            + ["https://images.example.com/huge?" + String(repeating: "q", count: 3000)]
        var seen = keys.map { ledger.count(ofKey: $0) }
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<5_000 {
            let raised = Int.random(in: 0..<keys.count, using: &generator)
            ledger.raise(forKey: keys[raised])
            #expect(ledger.trackedKeyBytes <= max(2000, keys[raised].utf8.count))
            for index in keys.indices {
                let count = ledger.count(ofKey: keys[index])
                #expect(count >= seen[index], "a count went back")
                if index == raised { #expect(count > seen[index], "a replacement left its count as it was") }
                seen[index] = count
            }
        }
    }

    /// A long random run against what the counts promise: a URL's count never goes down, it goes up at
    /// each of its replacements, and it stays the same across other URLs' replacements except at the
    /// rare moment the ledger forgets its older half (at most once per `limit / 2` replacements).
    @Test func countsRiseAtEachReplacementAndNeverGoBack() {
        var ledger = ReplacementLedger(limit: 64)
        let keys = (0..<300).map { "https://images.example.com/\($0).jpg" }
        var seen = keys.map { ledger.count(ofKey: $0) }
        var generator = SeededGenerator(seed: 7)
        var raises = 0
        var changedWithoutRaise = 0
        var raisesAtLastForget = 0
        for _ in 0..<20_000 {
            let raised = Int.random(in: 0..<keys.count, using: &generator)
            let before = ledger.trackedCount
            ledger.raise(forKey: keys[raised])
            raises += 1
            let forgot = ledger.trackedCount < before
            if forgot {
                #expect(raises - raisesAtLastForget >= 32, "forgot again after \(raises - raisesAtLastForget)")
                raisesAtLastForget = raises
            }
            #expect(ledger.trackedCount <= 64)
            for index in keys.indices {
                let count = ledger.count(ofKey: keys[index])
                #expect(count >= seen[index], "a count went back")
                if index == raised {
                    #expect(count > seen[index], "a replacement left its count as it was")
                } else if count != seen[index] {
                    #expect(forgot, "another URL's replacement changed this one's count")
                    changedWithoutRaise += 1
                }
                seen[index] = count
            }
        }
        // The forgetting happened (the run covers it), and left most other counts alone.
        #expect(raisesAtLastForget > 0)
        #expect(changedWithoutRaise > 0)
    }
}
