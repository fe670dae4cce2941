import Foundation
import Testing

@testable import AsyncImageCache

/// A model made to replace another on screen (`CachedImage` makes one when the display scale
/// changes, as when a window moves to another screen) draws the image already shown until its own
/// lands: no placeholder in between, no change to the box.
@MainActor @Suite struct CachedImageModelReplacementTests {
    private typealias LocalPhoto = CachedImageModelLoadingTests.LocalPhoto

    /// A model of `photo` at `scale`, laid out at 100x67 pt, that has loaded its image.
    private func shown(_ photo: LocalPhoto, scale: CGFloat, cornerRadius: CGFloat = 0) async -> CachedImageModel {
        let model = CachedImageModel(
            url: photo.url, cornerRadius: cornerRadius, displayScale: scale, layoutSize: CGSize(width: 100, height: 67),
            store: photo.store)
        await model.load()
        return model
    }

    @Test func aSharperScaleDrawsThePreviousImageUntilItsOwnLands() async throws {
        let photo = try LocalPhoto()
        let previous = await shown(photo, scale: 2)
        #expect(previous.image?.pixelSize.width == 200)
        previous.disappear()  // as CachedImage's holder does
        let model = CachedImageModel(
            url: photo.url, displayScale: 3, layoutSize: previous.layoutSize, replacing: previous, store: photo.store)
        #expect(model.image?.pixelSize.width == 200)
        #expect(model.reservedSize == previous.reservedSize)
        var drawn: [Int?] = []
        model.onChange = { drawn.append(model.image?.pixelSize.width) }
        await model.load()
        #expect(drawn == [300])  // straight from the previous image to the sharper one
        #expect(model.image?.pixelSize.width == 300)
        #expect(model.reservedSize == previous.reservedSize)
        #expect(photo.decoder.count == 2)
    }

    @Test func aCoarserScaleKeepsThePreviousImageWithoutALoad() async throws {
        let photo = try LocalPhoto()
        let previous = await shown(photo, scale: 3)
        previous.disappear()
        let model = CachedImageModel(
            url: photo.url, displayScale: 2, layoutSize: previous.layoutSize, replacing: previous, store: photo.store)
        await model.load()
        #expect(model.image?.pixelSize.width == 300)
        #expect(photo.decoder.count == 1)
    }

    /// A model made for a view shown again on a screen of another scale takes over the image its previous
    /// model kept while away, and checks the local file as the previous model would have on its return: the
    /// photo may have been edited and saved in place meanwhile. Before, it had asked the store for nothing,
    /// so it had nothing to check, and drew the old photo for as long as its frame needed no more pixels.
    @Test func aModelReplacingOneShownAgainChecksTheFileItTakesOver() async throws {
        let photo = try LocalPhoto()
        let previous = await shown(photo, scale: 3)
        #expect(previous.image?.pixelSize == PixelSize(width: 300, height: 200))
        previous.disappear()
        try SampleImages.jpeg(width: 1200, height: 1200, seed: 5).write(to: photo.url)

        let model = CachedImageModel(
            url: photo.url, displayScale: 2, layoutSize: previous.layoutSize, replacing: previous, store: photo.store)
        await model.load()
        try await waitUntil { @MainActor in model.fileCheck == nil }
        let drawn = model.image?.pixelSize
        #expect(drawn == PixelSize(width: 300, height: 300), "still the old photo: \(String(describing: drawn))")
        model.disappear()
    }

    @Test func roundedCornersKeepDrawingUntilTheImageWithCornersInPointsLands() async throws {
        let photo = try LocalPhoto()
        let previous = await shown(photo, scale: 3, cornerRadius: 10)
        previous.disappear()
        let model = CachedImageModel(
            url: photo.url, cornerRadius: 10, displayScale: 2, layoutSize: previous.layoutSize, replacing: previous,
            store: photo.store)
        // 30 px corners on 300 px drawn over 100 pt are 10 pt: the previous image fits as it is.
        await model.load()
        #expect(model.image?.pixelSize.width == 300)
        #expect(photo.decoder.count == 1)
    }

    /// `load()` called before the first layout waits for it; when that layout finds the previous image
    /// covering the frame there is nothing to load, and the call returns then.
    @Test func aLoadWaitingForTheFirstLayoutReturnsWhenThePreviousImageCoversIt() async throws {
        let photo = try LocalPhoto()
        let previous = await shown(photo, scale: 3)
        previous.disappear()
        let model = CachedImageModel(url: photo.url, displayScale: 2, replacing: previous, store: photo.store)
        let hydration = Task { await model.load() }
        try await waitUntil { @MainActor in !model.waiters.isEmpty }
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        let waiting = model.waiters.count
        #expect(waiting == 0, "load() still waits with the image shown and nothing loading")
        model.disappear()  // ends a load() left waiting, so that a failure does not hang the test
        await hydration.value
        #expect(!model.isLoading)
        #expect(model.image?.pixelSize.width == 300)
        #expect(photo.decoder.count == 1)
    }

    @Test func anotherURLDoesNotDrawThePreviousImage() async throws {
        let photo = try LocalPhoto()
        let previous = await shown(photo, scale: 2)
        previous.disappear()
        let other = photo.folder.url.appendingPathComponent("missing.jpg")
        let model = CachedImageModel(
            url: other, displayScale: 2, layoutSize: previous.layoutSize, replacing: previous, store: photo.store)
        #expect(model.image == nil)
        #expect(model.reservedSize == nil)
    }
    /// A model made for another display scale whose request comes out the same (both widths capped by
    /// `maxPixelWidth`) takes over the load in flight with its decode: before, the decode under way was
    /// told to stop and the image decoded a second time, its new run queued behind the slot.
    @Test func aModelTakingOverTheSameRequestKeepsTheDecodeUnderWay() async throws {
        let folder = TemporaryDirectory("handover-same-request")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 400, height: 300)], into: folder.url)
        let url = folder.url.appendingPathComponent(names[0])
        let decoder = GatedDecoder()
        let files = FileInspectorSpy()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = decoder
            $0.decodeConcurrency = 1
            $0.fileInspector = files
        }
        let layout = CGSize(width: 100, height: 75)
        let previous = CachedImageModel(url: url, maxPixelWidth: 150, displayScale: 2, layoutSize: layout, store: store)
        let first = Task { await previous.load() }
        try await waitUntil { decoder.enteredCount == 1 }
        let model = CachedImageModel(
            url: url, maxPixelWidth: 150, displayScale: 3, layoutSize: layout, replacing: previous, store: store)
        let request = try #require(model.request)
        #expect(request == previous.lastRequest, "150 px either way")
        previous.disappear()
        await first.value
        let statted = files.count
        let second = Task { await model.load() }
        // The new load has cancelled the one it replaces and looked at the file, then waits on the run of
        // its request (the old one, or before, a new one).
        try await waitUntil { files.count > statted }
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 1 }
        decoder.open()
        await second.value
        #expect(model.image?.pixelSize.width == 150)
        #expect(decoder.enteredCount == 1, "decodes: \(decoder.enteredCount)")
        #expect(decoder.cancellationsSeen == [false])
    }
}
