import Foundation
import Testing

@testable import AsyncImageCache

/// Configuration values at their extremes, and what a load cut short keeps once the store was emptied.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreLifecycleEdgeTests {
    /// `decodeConcurrency` is an `Int` the store clamps below (0 and negatives mean 1); an app that asks
    /// for no limit with `.max` must get prefetching, not a trap on the overflow of twice the limit.
    @Test func prefetchingWithAnUnboundedDecodeConcurrencyDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let names = try SampleImages.writeJPEGs([PixelSize(width: 64, height: 48)], into: folder.url)
            for concurrency in [Int.max, Int.max / 2 + 1] {
                let store = try ImageStore.makeForTesting(
                    root: folder.url.appendingPathComponent("cache"), name: "c\(concurrency)"
                ) { $0.decodeConcurrency = concurrency }
                let request = ImageRequest(url: folder.url.appendingPathComponent(names[0]), targetWidth: 32)
                store.startPrefetching([request])  // before: arithmetic overflow in `prefetchConcurrency`
                try await waitUntil { store.cachedImage(for: request) != nil }
                precondition(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 32, height: 24))
            }
        }
    }
}
