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
}
