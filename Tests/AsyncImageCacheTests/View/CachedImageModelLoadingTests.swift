import Foundation
import Testing

@testable import AsyncImageCache

/// What the model asks the store for, when it asks again, and how it stops.
@MainActor @Suite(.timeLimit(.minutes(3))) struct CachedImageModelLoadingTests {
    /// A 2400x1600 photo on disk and a store whose decodes are counted.
    struct LocalPhoto {
        let folder = TemporaryDirectory("images")
        let url: URL
        let decoder = CountingDecoder()
        let store: ImageStore

        init(size: PixelSize = PixelSize(width: 2400, height: 1600)) throws {
            let name = try SampleImages.writeJPEGs([size], into: folder.url)[0]
            url = folder.url.appendingPathComponent(name)
            let decoder = decoder
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decoder = decoder
            }
        }
    }

    /// A 2400x1600 photo on disk and a store whose decodes wait at a gate while it is closed.
    struct GatedPhoto {
        let folder = TemporaryDirectory("images")
        let url: URL
        let gate: GatedDecoder
        let store: ImageStore

        init(open: Bool) throws {
            let name = try SampleImages.writeJPEGs([PixelSize(width: 2400, height: 1600)], into: folder.url)[0]
            url = folder.url.appendingPathComponent(name)
            let gate = GatedDecoder(open: open)
            self.gate = gate
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decoder = gate
            }
        }
    }

    @Test func theRequestIsTheLaidOutWidthTimesTheScaleRoundedUp() async throws {
        let photo = try LocalPhoto()
        let model = CachedImageModel(url: photo.url, cornerRadius: 8, displayScale: 3, store: photo.store)
        model.layoutChanged(to: CGSize(width: 160.5, height: 107))
        await model.load()
        #expect(model.lastRequest?.targetPixelWidth == 482)  // 481.5 rounded up
        #expect(model.lastRequest?.cornerPixelRadius == 24)
        #expect(model.image?.pixelSize.width == 482)
    }

    @Test func maxPixelWidthCapsTheRequestAndScalesTheRadiusAlike() async throws {
        let photo = try LocalPhoto()
        let model = CachedImageModel(
            url: photo.url, cornerRadius: 10, maxPixelWidth: 400, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 400, height: 300))
        await model.load()
        #expect(model.lastRequest?.targetPixelWidth == 400)
        #expect(model.lastRequest?.cornerPixelRadius == 10)  // 10 pt drawn over 400 pt from 400 px
        #expect(model.image?.pixelSize == PixelSize(width: 400, height: 267))
    }

    @Test func pixelWidthsIgnoreFloatingPointNoiseButNeverFallShort() {
        #expect(DisplayPixels.width(forLayoutWidth: 200, scale: 1.1, maxPixelWidth: nil) == 220)
        #expect(DisplayPixels.width(forLayoutWidth: 100.25, scale: 2, maxPixelWidth: nil) == 201)
        #expect(DisplayPixels.width(forLayoutWidth: 0, scale: 2, maxPixelWidth: nil) == nil)
        #expect(DisplayPixels.width(forLayoutWidth: 500, scale: 2, maxPixelWidth: 320) == 320)
    }

    /// A cap under one pixel (a cap computed as 0, or negative) is the smallest, 1 px, not none: a frame
    /// of 300 pt at 2x asked for 600 px with `maxPixelWidth` 0.5, 0 or -3 (and with minus infinity, which
    /// was taken as none). Infinity and NaN are no cap.
    @Test(arguments: [0.5, 0, -3, -.infinity] as [CGFloat])
    func aCapUnderOnePixelIsOnePixel(cap: CGFloat) {
        #expect(DisplayPixels.width(forLayoutWidth: 300, scale: 2, maxPixelWidth: cap) == 1)
        #expect(DisplayPixels.cornerRadius(10, layoutWidth: 300, scale: 2, maxPixelWidth: cap) == 20.0 / 600)
        #expect(DisplayPixels.width(forLayoutWidth: 300, scale: 2, maxPixelWidth: .infinity) == 600)
        #expect(DisplayPixels.width(forLayoutWidth: 300, scale: 2, maxPixelWidth: .nan) == 600)
    }

    /// A fractional cap is a cap in whole pixels below it: widths round up, so 100.5 asked for 101 px,
    /// past the cap. The radius scales with the width asked for.
    @Test func aFractionalCapNeverAsksForMoreThanIt() throws {
        let url = URL(fileURLWithPath: "/tmp/photo.jpg")
        let capped = try #require(
            CachedImageModel.request(
                url: url, layoutSize: CGSize(width: 200, height: 100), cornerRadius: 10, maxPixelWidth: 100.5))
        #expect(capped.targetPixelWidth == 100 && capped.cornerPixelRadius == 5)
        // 0.29 * 100 is 28.999999999999996: floating-point noise, not a fraction of a pixel.
        #expect(DisplayPixels.width(forLayoutWidth: 300, scale: 1, maxPixelWidth: 0.29 * 100) == 29)
        #expect(DisplayPixels.width(forLayoutWidth: 300, scale: 1, maxPixelWidth: 1.9) == 1)
    }

    /// A display scale so small that a pixel is wider than any finite number of points (a subnormal one,
    /// under 1 / `CGFloat.greatestFiniteMagnitude`) still gives a request: before, `.fit` drew the image at
    /// an infinite width, there was no request, and `load()` waited for one for ever.
    @Test func aSubnormalDisplayScaleStillGivesARequest() {
        let request = CachedImageModel.request(
            url: URL(fileURLWithPath: "/tmp/photo.jpg"), layoutSize: CGSize(width: 100, height: 100),
            imageSize: CGSize(width: 1, height: 1e308), displayScale: CGFloat.leastNormalMagnitude / 8)
        #expect(request?.targetPixelWidth == 1)
    }

    @Test func anImageInMemoryIsDrawnAtOnceWithoutALoad() async throws {
        let photo = try LocalPhoto()
        _ = try await photo.store.image(for: ImageRequest(url: photo.url, targetWidth: 600))
        let model = CachedImageModel(
            url: photo.url, displayScale: 2, layoutSize: CGSize(width: 300, height: 200), store: photo.store)
        #expect(model.image?.pixelSize.width == 600)
        await model.load()
        #expect(!model.isLoading)
        #expect(photo.decoder.count == 1)
    }

    /// Memory never looks at a file, so a local photo edited and saved in place after it was decoded is
    /// drawn old at first; the model's load checks the file and brings the new one. Before, a model that
    /// found the image in memory never loaded, and drew the old photo for as long as memory kept it.
    @Test func aLocalFileChangedOnDiskIsDrawnAnewOnceTheModelLoads() async throws {
        let photo = try LocalPhoto()
        _ = try await photo.store.image(for: ImageRequest(url: photo.url, targetWidth: 600))
        try SampleImages.jpeg(width: 1200, height: 1200, seed: 5).write(to: photo.url)
        let model = CachedImageModel(
            url: photo.url, displayScale: 2, layoutSize: CGSize(width: 300, height: 200), store: photo.store)
        #expect(model.image?.pixelSize == PixelSize(width: 600, height: 400), "drawn from memory at first")
        await model.load()
        try await waitUntil { @MainActor in model.image?.pixelSize == PixelSize(width: 600, height: 600) }
        #expect(photo.decoder.count == 2)
        // Unchanged since, a second model draws the new image from memory and its check decodes nothing.
        let again = CachedImageModel(
            url: photo.url, displayScale: 2, layoutSize: CGSize(width: 300, height: 200), store: photo.store)
        await again.load()
        try await waitUntil { @MainActor in again.fileCheck == nil }
        #expect(again.image?.pixelSize == PixelSize(width: 600, height: 600))
        #expect(photo.decoder.count == 2)
    }

    /// A model that leaves the screen while the check of its local file decodes the file's new bytes stops
    /// the check, and checks again when it is shown again. Before, the check was lost: the model went on
    /// drawing the old photo it had from memory (which the check had already let go), however often shown.
    @Test func aFileCheckStoppedByLeavingTheScreenIsMadeAgainOnReturn() async throws {
        let photo = try GatedPhoto(open: true)
        let (url, gate, store) = (photo.url, photo.gate, photo.store)
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 600))
        try SampleImages.jpeg(width: 1200, height: 1200, seed: 5).write(to: url)
        let model = CachedImageModel(
            url: url, displayScale: 2, layoutSize: CGSize(width: 300, height: 200), store: store)
        gate.close()
        await model.load()
        try await waitUntil { gate.enteredCount == 2 }  // the check decodes the new bytes
        model.disappear()
        gate.open()
        try await waitUntil { store.variantRuns.count == 0 && store.decodeSlots.busyCount == 0 }
        #expect(model.image?.pixelSize == PixelSize(width: 600, height: 400), "the old photo, until checked")

        await model.load()  // shown again
        try await waitUntil { @MainActor in model.fileCheck == nil }
        let drawn = model.image?.pixelSize
        #expect(drawn == PixelSize(width: 600, height: 600), "still the old photo: \(String(describing: drawn))")
        model.disappear()
    }

    /// A model whose image came from its own load, shown again after its local file changed on disk, checks
    /// the file as one that drew the image from memory does. Before, it kept drawing the old photo, however
    /// often shown, for as long as the frame needed no more pixels.
    @Test func aModelShownAgainAfterItsFileChangedDrawsTheNewFile() async throws {
        let photo = try LocalPhoto()
        let model = CachedImageModel(
            url: photo.url, displayScale: 2, layoutSize: CGSize(width: 300, height: 200), store: photo.store)
        await model.load()
        #expect(model.image?.pixelSize == PixelSize(width: 600, height: 400))
        model.disappear()
        try SampleImages.jpeg(width: 1200, height: 1200, seed: 5).write(to: photo.url)

        await model.load()  // shown again
        try await waitUntil { @MainActor in model.fileCheck == nil }
        let drawn = model.image?.pixelSize
        #expect(drawn == PixelSize(width: 600, height: 600), "still the old photo: \(String(describing: drawn))")
        model.disappear()
    }

    /// Cancelling the only caller of `load()` stops what the model does, as `disappear()` does: the check
    /// of a local file drawn from memory as well as the load.
    @Test func cancellingTheOnlyCallerOfLoadStopsTheFileCheckToo() async throws {
        let folder = TemporaryDirectory("images")
        let file = folder.url.appendingPathComponent("photo.jpg")
        try SampleImages.jpeg(width: 300, height: 200).write(to: file)
        let changed = try SampleImages.jpeg(width: 200, height: 200, seed: 3)
        let gate = GatedDecoder(holdingOnly: changed)
        defer { gate.open() }  // a failed expectation below must not leave a decode waiting for ever
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
            $0.decodeConcurrency = 2
        }
        _ = try await store.image(for: ImageRequest(url: file, targetWidth: 100))
        try changed.write(to: file)
        // Drawn from memory at 100 px; a frame of 150 then needs a load, and the file a check: both decode
        // the changed file, held at the gate.
        let model = CachedImageModel(
            url: file, displayScale: 1, layoutSize: CGSize(width: 100, height: 67), store: store)
        #expect(model.image?.pixelSize.width == 100)
        model.layoutChanged(to: CGSize(width: 150, height: 100))
        let caller = Task { await model.load() }
        try await waitUntil { gate.enteredCount == 2 }
        #expect(model.fileCheck != nil && model.isLoading)
        caller.cancel()
        await caller.value
        try await waitUntil { @MainActor in model.fileCheck == nil && store.variantRuns.count == 0 }
        #expect(!model.isLoading)
    }

    @Test func aRowPrefetchedWithTheModelsRequestIsDrawnFromMemoryWithoutASecondDecode() async throws {
        let photo = try LocalPhoto()
        let frame = CGSize(width: 318, height: 212)
        let request = try #require(
            CachedImageModel.request(url: photo.url, layoutSize: frame, cornerRadius: 6, displayScale: 3))
        _ = try await photo.store.image(for: request)
        let model = CachedImageModel(
            url: photo.url, cornerRadius: 6, displayScale: 3, layoutSize: frame, store: photo.store)
        #expect(model.request == request)
        #expect(model.image?.pixelSize.width == 954)
        #expect(photo.decoder.count == 1)
    }

    @Test func growingTheFrameLoadsALargerImageAndKeepsTheOldOneUntilItLands() async throws {
        let photo = try LocalPhoto()
        let model = CachedImageModel(url: photo.url, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        await model.load()
        #expect(model.image?.pixelSize.width == 200)
        var drawn: [Int?] = []
        model.onChange = { drawn.append(model.image?.pixelSize.width) }

        model.layoutChanged(to: CGSize(width: 300, height: 200))
        #expect(model.isLoading)
        #expect(model.lastRequest?.targetPixelWidth == 600)
        #expect(model.image?.pixelSize.width == 200)
        await model.load()
        #expect(model.image?.pixelSize.width == 600)
        #expect(drawn == [600])  // straight from the old image to the new, never back to the placeholder
        #expect(photo.decoder.count == 2)
    }

    @Test func shrinkingTheFrameKeepsTheLargerImageAndAsksForNothing() async throws {
        let photo = try LocalPhoto()
        let model = CachedImageModel(url: photo.url, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 300, height: 200))
        await model.load()
        let request = model.lastRequest
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        #expect(!model.isLoading)
        await model.load()
        #expect(model.lastRequest == request)
        #expect(model.image?.pixelSize.width == 600)
        #expect(photo.decoder.count == 1)
    }

    @Test func growingPastASmallSourceDoesNotAskAgain() async throws {
        let photo = try LocalPhoto(size: PixelSize(width: 120, height: 80))
        let model = CachedImageModel(url: photo.url, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        await model.load()
        #expect(model.image?.pixelSize.width == 120)  // never scaled up
        model.layoutChanged(to: CGSize(width: 300, height: 200))
        #expect(!model.isLoading)
        #expect(photo.decoder.count == 1)
    }

    @Test func aSourceNarrowerThanTheFrameKeepsItsCornersInPointsAsTheFrameGrows() async throws {
        let photo = try LocalPhoto(size: PixelSize(width: 120, height: 80))
        func prepared(radius: Int) async throws -> PlatformImage {
            let folder = TemporaryDirectory("reference")
            let store = try ImageStore.makeForTesting(root: folder.url)
            return try await store.image(for: ImageRequest(url: photo.url, cornerRadius: CGFloat(radius)))
        }
        let model = CachedImageModel(url: photo.url, cornerRadius: 10, displayScale: 2, store: photo.store)
        // 10 pt corners over a 200 px frame are 20 px there, 12 px on the 120 px source.
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        await model.load()
        let twelvePixels = try await prepared(radius: 12)
        #expect(model.image == twelvePixels ? true : false)  // a Bool: a failure would print every pixel
        // Over a 600 px frame: 4 px, so the wider frame asks again.
        model.layoutChanged(to: CGSize(width: 300, height: 200))
        #expect(model.isLoading)
        await model.load()
        let fourPixels = try await prepared(radius: 4)
        #expect(model.image == fourPixels ? true : false)
        #expect(photo.decoder.count == 2)
        // A frame whose corners round to the same 4 px takes that image as it is.
        model.layoutChanged(to: CGSize(width: 310, height: 207))
        #expect(!model.isLoading)
        #expect(photo.decoder.count == 2)
    }

    /// The image for `request` as a fresh store prepares it, to compare pixels with.
    private static func reference(_ request: ImageRequest) async throws -> PlatformImage {
        let folder = TemporaryDirectory("reference")
        return try await ImageStore.makeForTesting(root: folder.url).image(for: request)
    }

    @Test func shrinkingAFrameWithRoundedCornersKeepsTheCornersInPoints() async throws {
        let photo = try LocalPhoto()
        let model = CachedImageModel(url: photo.url, cornerRadius: 10, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 300, height: 200))
        await model.load()
        let wide = model.image
        // Shrunk and back in one frame: the load for the frame in between is dropped, not drawn.
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        #expect(model.isLoading)
        model.layoutChanged(to: CGSize(width: 300, height: 200))
        #expect(!model.isLoading)
        await model.load()
        #expect(model.image == wide ? true : false)
        // The 600 px image's 20 px corners, drawn over 100 pt, would be 3.3 pt: it needs 200 px with 20 px.
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        await model.load()
        #expect(model.lastRequest == ImageRequest(url: photo.url, targetWidth: 200, cornerRadius: 20))
        let expected = try await Self.reference(ImageRequest(url: photo.url, targetWidth: 200, cornerRadius: 20))
        #expect(model.image == expected ? true : false, "drawn: \(model.image.map { "\($0.pixelSize)" } ?? "nil")")
        // A frame a hair narrower, whose corners come out within half a pixel, takes the image as it is.
        model.layoutChanged(to: CGSize(width: 99.5, height: 66))
        #expect(!model.isLoading)
        #expect(photo.decoder.count == 2)
    }

    @Test func aFrameGrowingPastMaxPixelWidthKeepsTheCornersInPoints() async throws {
        let photo = try LocalPhoto()
        let model = CachedImageModel(
            url: photo.url, cornerRadius: 10, maxPixelWidth: 400, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 400, height: 267))
        await model.load()
        // Still 400 px, but drawn over 800 pt its corners need 5 px to be 10 pt, not 10 px (20 pt).
        model.layoutChanged(to: CGSize(width: 800, height: 533))
        await model.load()
        #expect(model.lastRequest == ImageRequest(url: photo.url, targetWidth: 400, cornerRadius: 5))
        let expected = try await Self.reference(ImageRequest(url: photo.url, targetWidth: 400, cornerRadius: 5))
        #expect(model.image == expected ? true : false)
    }

    @Test func loadWaitsForTheFirstLayout() async throws {
        let photo = try LocalPhoto()
        let model = CachedImageModel(url: photo.url, displayScale: 2, store: photo.store)
        let hydration = Task { await model.load() }
        try await waitUntil { @MainActor in model.layoutSize == nil && !model.waiters.isEmpty }
        #expect(model.lastRequest == nil)
        model.layoutChanged(to: CGSize(width: 50, height: 33))
        await hydration.value
        #expect(model.image?.pixelSize.width == 99)  // the 3:2 photo fits 33 pt of height 49.5 pt wide
    }

    /// Runs `model.load()` in a task and reports whether it returned within `seconds`; the task is
    /// cancelled after, so a hang ends the test instead of stalling it.
    private static func loadReturns(
        _ model: CachedImageModel, within seconds: Double, after trigger: @MainActor () async throws -> Void
    ) async throws -> Bool {
        let returned = LockedBox(false)
        let hydration = Task {
            await model.load()
            returned.withLock { $0 = true }
        }
        try await trigger()
        for _ in 0..<Int(seconds * 100) where !returned.withLock({ $0 }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        let result = returned.withLock { $0 }
        hydration.cancel()
        await hydration.value
        return result
    }

    /// A display scale of 0 or NaN (a bad value passed through) makes no request from any layout: load()
    /// returns instead of waiting for one until its task is cancelled, as it did before.
    @Test(arguments: [0, -1, CGFloat.nan, CGFloat.infinity])
    func loadReturnsAtOnceWhenTheDisplayScaleCanGiveNoRequest(scale: CGFloat) async throws {
        let photo = try LocalPhoto(size: PixelSize(width: 400, height: 300))
        let model = CachedImageModel(
            url: photo.url, displayScale: scale, layoutSize: CGSize(width: 100, height: 75), store: photo.store)
        let returned = try await Self.loadReturns(model, within: 10) {}
        #expect(returned, "load() went on waiting with scale \(scale)")
        #expect(model.request == nil)
        #expect(photo.decoder.count == 0)
    }

    @Test func loadReturnsWhenTheFirstLayoutFindsTheImageInMemory() async throws {
        let photo = try LocalPhoto(size: PixelSize(width: 400, height: 300))
        _ = try await photo.store.image(for: ImageRequest(url: photo.url, targetWidth: 100))
        let model = CachedImageModel(url: photo.url, displayScale: 2, store: photo.store)
        let returned = try await Self.loadReturns(model, within: 20) {
            try await waitUntil { @MainActor in !model.waiters.isEmpty }
            model.layoutChanged(to: CGSize(width: 50, height: 38))
            #expect(model.image?.pixelSize.width == 100)  // drawn from memory, nothing to load
            #expect(!model.isLoading)
        }
        #expect(returned, "load() went on waiting with the image drawn and nothing loading")
    }

    @Test func loadReturnsWhenAWiderImageInMemoryReplacesTheLoadItWaitsFor() async throws {
        let photo = try GatedPhoto(open: false)
        let (url, gate, store, folder) = (photo.url, photo.gate, photo.store, photo.folder)
        let model = CachedImageModel(url: url, displayScale: 2, layoutSize: CGSize(width: 50, height: 34), store: store)
        let returned = try await Self.loadReturns(model, within: 20) {
            try await waitUntil { @MainActor in model.isLoading && !model.waiters.isEmpty }
            // Meanwhile another view put a wider variant of the same file in memory.
            let other = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("other"))
            let wide = ImageRequest(url: url, targetWidth: 600)
            store.variants.insert(try await other.prepared(wide).get(), for: wide)
            model.layoutChanged(to: CGSize(width: 300, height: 200))
            #expect(model.image?.pixelSize.width == 600)
            #expect(!model.isLoading)  // the narrower load was cancelled as covered
        }
        gate.open()
        #expect(returned, "load() went on waiting after the load it waited for was cancelled as covered")
    }
}
