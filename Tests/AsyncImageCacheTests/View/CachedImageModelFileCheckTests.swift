import Foundation
import Testing

@testable import AsyncImageCache

/// The check of a local file drawn from memory, or kept while the model was away, against the file on
/// disk, when the frame changes while it runs.
@MainActor @Suite struct CachedImageModelFileCheckTests {
    /// A decoder that holds the decodes asked to cover more than `width` pixels until ``open()``, and
    /// lets the others through.
    final class WideDecodeGate: ImageDecoding, @unchecked Sendable {
        // `isOpen` and `held` are only touched while holding `condition`.
        private let condition = NSCondition()
        private var isOpen = false
        private var held = 0
        private let width: Int
        private let base = ImageDecoders.Default()

        init(holdingWiderThan width: Int) {
            self.width = width
        }

        /// Decodes held at the gate now or before.
        var heldCount: Int { condition.withLock { held } }

        func open() {
            condition.withLock {
                isOpen = true
                condition.broadcast()
            }
        }

        func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            if let size = context.minimumSize, size.width > width {
                condition.withLock {
                    held += 1
                    while !isOpen { condition.wait() }
                }
            }
            return try base.decode(data, context: context)
        }
    }

    /// A 2400x1600 photo shown at 100 pt (200 px at 2x) by a model of a store whose decodes wider than
    /// 700 px wait at `gate`.
    @MainActor struct Scene {
        static let small = CGSize(width: 100, height: 67)
        let folder: TemporaryDirectory
        let url: URL
        let gate: WideDecodeGate
        let store: ImageStore
        let model: CachedImageModel

        static func shown() async throws -> Scene {
            let folder = TemporaryDirectory("file-check")
            let url = folder.url.appendingPathComponent("photo.jpg")
            try SampleImages.jpeg(width: 2400, height: 1600).write(to: url)
            let gate = WideDecodeGate(holdingWiderThan: 700)
            let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decoder = gate
            }
            let model = CachedImageModel(url: url, displayScale: 2, layoutSize: small, store: store)
            await model.load()
            #expect(model.image?.pixelSize == PixelSize(width: 200, height: 133))
            return Scene(folder: folder, url: url, gate: gate, store: store, model: model)
        }

        /// Saves a 1200x1200 photo over the file, in place.
        func saveOver() throws {
            try SampleImages.jpeg(width: 1200, height: 1200, seed: 5).write(to: url)
        }
    }

    /// A model shown again after its photo was saved over in place checks the file; the frame grows
    /// while the check runs, so a wider load starts, and the check's new image is not drawn, as that
    /// load brings the new file too; then the frame goes back to the one the old image covers, which
    /// cancels the wider load. Before, the model went on drawing the old photo, though the check had
    /// found and decoded the new one (and memory had it), for as long as it stayed on screen.
    @Test func aCheckLandingWhileAWiderLoadRunsIsNotLostWhenTheFrameShrinksBack() async throws {
        let scene = try await Scene.shown()
        let (gate, model) = (scene.gate, scene.model)
        defer { gate.open() }
        model.disappear()
        try scene.saveOver()

        await model.load()  // shown again: the file is checked
        #expect(model.fileCheck != nil)
        model.layoutChanged(to: CGSize(width: 400, height: 267))  // 800 px: a load, held at the gate
        #expect(model.isLoading)
        try await waitUntil { @MainActor in model.fileCheck == nil && gate.heldCount == 1 }
        model.layoutChanged(to: Scene.small)  // the old image covers it again: the wider load is cancelled
        #expect(!model.isLoading)
        try await waitUntil { @MainActor in model.fileCheck == nil }
        let drawn = model.image?.pixelSize
        #expect(drawn == PixelSize(width: 200, height: 200), "still the old photo: \(String(describing: drawn))")
        model.disappear()
    }

    /// A model shown again after its photo was saved over in place, whose frame grew while it was away:
    /// the wider load it starts on its return reads the file as it is now, so no check was made; but the
    /// frame goes back to the one the old image covers before that load lands, which cancels it. Before,
    /// the model then drew the old photo for as long as it stayed on screen.
    @Test func aFrameThatGrewWhileAwayAndShrinksBackAfterTheReturnDoesNotKeepTheOldPhoto() async throws {
        let scene = try await Scene.shown()
        let (gate, model) = (scene.gate, scene.model)
        defer { gate.open() }
        model.disappear()
        model.layoutChanged(to: CGSize(width: 400, height: 267))  // away: nothing loads
        #expect(!model.isLoading)
        try scene.saveOver()

        let hydration = Task { await model.load() }  // shown again: an 800 px load, held at the gate
        try await waitUntil { @MainActor in model.isLoading && gate.heldCount == 1 }
        model.layoutChanged(to: Scene.small)  // the old image covers it again: the wider load is cancelled
        await hydration.value
        gate.open()
        try await waitUntil { @MainActor in model.fileCheck == nil && !model.isLoading }
        let drawn = model.image?.pixelSize
        #expect(drawn?.width == drawn?.height, "still the old photo: \(String(describing: drawn))")
        model.disappear()
    }

    /// A model shown again after its photo was saved over in place starts a wider load (its frame grew while
    /// away) and is replaced, before that load lands, by a model for another display scale whose frame the old
    /// image covers: the load handed over is dropped, and the new model, which takes no request from a model
    /// with a load in flight, checked nothing. Before, it drew the old photo for as long as it stayed on
    /// screen; now it checks the request of its frame.
    @Test func aModelReplacingOneWhoseReturnLoadIsInFlightChecksTheFile() async throws {
        let scene = try await Scene.shown()
        let (url, gate, store, model) = (scene.url, scene.gate, scene.store, scene.model)
        defer { gate.open() }
        model.disappear()
        model.layoutChanged(to: CGSize(width: 400, height: 267))
        try scene.saveOver()
        let hydration = Task { await model.load() }  // shown again: an 800 px load, held at the gate
        try await waitUntil { @MainActor in model.isLoading && gate.heldCount == 1 }
        let replacement = CachedImageModel(
            url: url, displayScale: 1, layoutSize: Scene.small, replacing: model, store: store)
        model.disappear()
        await hydration.value
        await replacement.load()
        gate.open()
        #expect(!replacement.isLoading)  // the old image covers its 100 px
        try await waitUntil { @MainActor in replacement.fileCheck == nil }
        let drawn = replacement.image?.pixelSize
        #expect(drawn?.width == drawn?.height, "still the old photo: \(String(describing: drawn))")
        replacement.disappear()
    }

    /// A model shown again after its photo was deleted checks the file, and the check fails: the model goes on
    /// drawing the image it has (``CachedImageModel/image`` is never set back to `nil`), while the store forgets
    /// the file's image and size, so a model made for the URL afterwards finds nothing and draws no image.
    @Test func aCheckFindingTheFileDeletedKeepsTheImageDrawnWhileTheStoreForgetsIt() async throws {
        let scene = try await Scene.shown()
        let (url, store, model) = (scene.url, scene.store, scene.model)
        defer { scene.gate.open() }
        let request = try #require(model.lastRequest)
        #expect(store.cachedImage(for: request) != nil)
        model.disappear()
        try FileManager.default.removeItem(at: url)

        await model.load()  // shown again: the file is checked
        try await waitUntil { @MainActor in model.fileCheck == nil }
        #expect(model.image?.pixelSize == PixelSize(width: 200, height: 133))
        #expect(store.cachedImage(for: request) == nil)
        #expect(store.cachedPixelSize(for: url) == nil)
        model.disappear()

        let later = CachedImageModel(url: url, displayScale: 2, layoutSize: Scene.small, store: store)
        await later.load()
        #expect(later.image == nil)
        #expect(later.reservedSize == nil)
        later.disappear()
    }
}
