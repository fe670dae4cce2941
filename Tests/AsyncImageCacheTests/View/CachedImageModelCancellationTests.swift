import Foundation
import Testing

@testable import AsyncImageCache

/// A model that leaves the screen stops its load: no download finishes, no decode runs.
@MainActor @Suite struct CachedImageModelCancellationTests {
    @MainActor private struct SlowImage {
        let folder = TemporaryDirectory("images")
        let server: TestHTTPServer
        /// A request timeout far beyond any stall of a loaded run: a held response is pending for as long
        /// as the test takes to release it, and with the default 30 s one timed out first (image nil).
        let loader = RecordingLoader(base: DataLoader(timeout: 600))
        let decoder = CountingDecoder()
        let model: CachedImageModel
        let path: String

        /// The server holds the response back until the test calls ``release()``, so a cancellation always
        /// lands while the response is pending, however loaded the machine (before, a response delayed
        /// 30 s by the clock); were it not to stop the download, no download would end and the test fail.
        static func held() async throws -> SlowImage {
            try await SlowImage(path: "/held/\(heldKey)/images/0.jpg")
        }

        private static let heldKey = "model"

        /// Lets a held response go.
        func release() async throws {
            try await server.release(Self.heldKey)
        }

        private init(path: String) async throws {
            self.path = path
            try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
            server = try await TestHTTPServer(serving: folder.url)
            let (loader, decoder) = (loader, decoder)
            let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.dataLoader = loader
                $0.decoder = decoder
            }
            model = CachedImageModel(
                url: server.url(path), displayScale: 2, layoutSize: CGSize(width: 100, height: 67), store: store)
        }

        /// Waits until the loader has recorded the end of the one download, and checks it was cancelled.
        func expectCancelledWithoutDecoding() async throws {
            try await waitUntil { loader.results.count == 1 }
            #expect(loader.results.first.map { if case .failure(.cancelled) = $0 { true } else { false } } == true)
            #expect(decoder.count == 0)
            #expect(model.image == nil)
            #expect(!model.isLoading)
        }
    }

    @Test func disappearCancelsTheLoadBeforeAnyDecode() async throws {
        let slow = try await SlowImage.held()
        defer { slow.server.stop() }
        let hydration = Task { await slow.model.load() }
        try await waitUntil { try await slow.server.hits(for: slow.path) == 1 }
        #expect(slow.model.isLoading)
        slow.model.disappear()
        await hydration.value
        try await slow.expectCancelledWithoutDecoding()
    }

    @Test func cancellingTheTaskThatCallsLoadCancelsTheStoreLoad() async throws {
        let slow = try await SlowImage.held()
        defer { slow.server.stop() }
        let hydration = Task { await slow.model.load() }
        try await waitUntil { try await slow.server.hits(for: slow.path) == 1 }
        hydration.cancel()  // what SwiftUI does to `.task` when the view disappears
        await hydration.value
        try await slow.expectCancelledWithoutDecoding()
    }

    @Test func growingTheFrameWhileTheImageDownloadsKeepsTheDownload() async throws {
        let slow = try await SlowImage.held()
        defer { slow.server.stop() }
        let hydration = Task { await slow.model.load() }
        try await waitUntil { try await slow.server.hits(for: slow.path) == 1 }
        slow.model.layoutChanged(to: CGSize(width: 300, height: 200))  // the wider load replaces the first
        // Released only once the wider load has run (it replaces the first when the main actor gets to it,
        // which other tests' work on the main actor can delay past a release that lets the first decode).
        let (store, wider) = (slow.model.store, try #require(slow.model.request))
        try await waitUntil { store.variantRuns.waiterCount(for: wider) == 1 }
        try await slow.release()
        await hydration.value
        #expect(slow.model.image?.pixelSize.width == 300)  // the whole 300 px source
        #expect(try await slow.server.hits(for: slow.path) == 1, "the download started again")
        #expect(slow.loader.results.count == 1)
        #expect(slow.decoder.count == 1)
    }

    /// Starts the model of `slow` loading, waits for its request to reach the server, then does what
    /// `CachedImage` does when its window moves to a sharper screen: a model for the new scale, then the
    /// old one's disappearing. Returns the new model.
    private func replacedWhileDownloading(_ slow: SlowImage) async throws -> CachedImageModel {
        let previous = slow.model
        let first = Task { await previous.load() }
        try await waitUntil { try await slow.server.hits(for: slow.path) == 1 }
        let model = CachedImageModel(
            url: previous.url, displayScale: 3, layoutSize: previous.layoutSize, replacing: previous,
            store: previous.store)
        previous.disappear()
        await first.value
        return model
    }

    /// The new model's load goes on with the download under way. Before, the old model cancelled it as
    /// it went and the new one asked the server again.
    @Test func aModelForANewScaleTakesOverTheDownloadOfTheOneItReplaces() async throws {
        let slow = try await SlowImage.held()
        defer { slow.server.stop() }
        let model = try await replacedWhileDownloading(slow)
        let second = Task { await model.load() }
        let (store, request) = (model.store, try #require(model.request))
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 1 }
        try await slow.release()
        await second.value
        #expect(model.image?.pixelSize.width == 300)  // the whole 300 px source
        #expect(try await slow.server.hits(for: slow.path) == 1, "the download started again")
        #expect(slow.loader.results.count == 1)
        #expect(slow.decoder.count == 1)
    }

    /// A model that took over a download and is itself replaced before it loads anything (the scale
    /// changes twice in quick succession) hands the download on again. Before, its disappearing
    /// cancelled the download, and the third model asked the server again.
    @Test func aDownloadHandedOverTwiceIsFetchedOnce() async throws {
        let slow = try await SlowImage.held()
        defer { slow.server.stop() }
        let middle = try await replacedWhileDownloading(slow)
        let model = CachedImageModel(
            url: middle.url, displayScale: 2, layoutSize: middle.layoutSize, replacing: middle, store: middle.store)
        middle.disappear()
        let third = Task { await model.load() }
        let (store, request) = (model.store, try #require(model.request))
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 1 }
        try await slow.release()
        await third.value
        #expect(model.image != nil)
        #expect(try await slow.server.hits(for: slow.path) == 1, "the download started again")
        #expect(slow.loader.results.count == 1)
    }

    /// The download handed over goes when the new model leaves the screen before it loads anything.
    @Test func aDownloadHandedOverIsCancelledWhenTheNewModelLeavesFirst() async throws {
        let slow = try await SlowImage.held()
        defer { slow.server.stop() }
        let model = try await replacedWhileDownloading(slow)
        #expect(!slow.model.isLoading)
        model.disappear()
        try await slow.expectCancelledWithoutDecoding()
    }

    @Test func aSecondCallerKeepsTheLoadWhenTheFirstLeaves() async throws {
        // Before, with the response held 3 s (then 10 s) by the clock, a loaded run (ThreadSanitizer,
        // or builds beside it) found the load over before the first caller had left, or the second
        // caller not yet waiting when it left.
        let slow = try await SlowImage.held()
        defer { slow.server.stop() }
        let leaving = Task { await slow.model.load() }
        let staying = Task { await slow.model.load() }
        try await waitUntil { try await slow.server.hits(for: slow.path) == 1 }
        try await waitUntil { await MainActor.run { slow.model.waiters.count == 2 } }
        leaving.cancel()
        await leaving.value
        #expect(slow.model.isLoading)
        try await slow.release()
        await staying.value
        #expect(slow.model.image?.pixelSize == PixelSize(width: 200, height: 133))
        #expect(slow.decoder.count == 1)
        #expect(try await slow.server.hits(for: slow.path) == 1)
    }
}
