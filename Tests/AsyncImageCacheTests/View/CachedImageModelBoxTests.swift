import Foundation
import Testing

@testable import AsyncImageCache

/// The reserved box: known before the pixels whenever the size is known at all, and unchanged when
/// they land, so nothing reflows.
@MainActor @Suite struct CachedImageModelBoxTests {
    let photo = PixelSize(width: 1200, height: 800)

    /// Hydrates `model` at a 300x200 pt frame at 2x and returns the box before and after.
    private func boxes(_ model: CachedImageModel) async -> (before: CGSize?, after: CGSize?) {
        let before = model.reservedSize
        model.layoutChanged(to: CGSize(width: 300, height: 200))
        await model.load()
        return (before, model.reservedSize)
    }

    /// The photo as `0.jpg` on a real loopback server, and a fresh store in the same temporary folder.
    private func servedPhoto() async throws -> (TemporaryDirectory, TestHTTPServer, ImageStore) {
        let images = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([photo], into: images.url)
        let server = try await TestHTTPServer(serving: images.url)
        return (images, server, try ImageStore.makeForTesting(root: images.url.appendingPathComponent("cache")))
    }

    @Test func anIntrinsicSizeIsTheBoxBeforeAndAfterHydration() async throws {
        let (images, server, store) = try await servedPhoto()
        // The folder outlives the server, which serves from it.
        defer { withExtendedLifetime(images) { server.stop() } }
        let intrinsic = CGSize(width: 600, height: 400)
        let model = CachedImageModel(
            url: server.url("/images/0.jpg"), intrinsicSize: intrinsic, displayScale: 2, store: store)
        let (before, after) = await boxes(model)
        #expect(before == intrinsic)
        #expect(after == intrinsic)
        #expect(model.image?.pixelSize == PixelSize(width: 600, height: 400))
    }

    @Test func aSizeCachedByAnEarlierLoadIsTheBoxBeforeAndAfter() async throws {
        let (images, server, store) = try await servedPhoto()
        // The folder outlives the server, which serves from it.
        defer { withExtendedLifetime(images) { server.stop() } }
        let url = server.url("/images/0.jpg")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 50))
        let (before, after) = await boxes(CachedImageModel(url: url, displayScale: 2, store: store))
        #expect(before == photo.cgSize)
        #expect(after == photo.cgSize)
    }

    @Test func afterARelaunchWithTheServerDownTheBoxAndPixelsComeFromDisk() async throws {
        let images = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([photo], into: images.url)
        let root = images.url.appendingPathComponent("cache")
        let server = try await TestHTTPServer(serving: images.url)
        let url = server.url("/images/0.jpg")
        let first = try ImageStore.makeForTesting(root: root)
        _ = try await first.image(for: ImageRequest(url: url, targetWidth: 50))
        first.waitForDiskMaintenance()
        server.stop()

        let relaunched = try ImageStore.makeForTesting(root: root)
        let model = CachedImageModel(url: url, displayScale: 2, store: relaunched)
        let (before, after) = await boxes(model)
        #expect(before == photo.cgSize)
        #expect(after == photo.cgSize)
        #expect(model.image?.pixelSize == PixelSize(width: 600, height: 400))
        #expect(relaunched.statistics.diskHits == 1)
        #expect(relaunched.statistics.sourceFetches == 0)
    }

    @Test func aLocalFileReservesItsHeaderSizeBeforeItsFirstLoad() async throws {
        let images = TemporaryDirectory("images")
        let name = try SampleImages.writeJPEGs([photo], into: images.url)[0]
        let store = try ImageStore.makeForTesting(root: images.url.appendingPathComponent("cache"))
        let model = CachedImageModel(url: images.url.appendingPathComponent(name), displayScale: 2, store: store)
        let (before, after) = await boxes(model)
        #expect(before == photo.cgSize)
        #expect(after == photo.cgSize)
        #expect(store.statistics.decodes == 1)
    }

    /// A server that sends `0x0` (or garbage) for an unknown size: the store's size is the box, not an
    /// empty or NaN one that never changes.
    @Test(arguments: [
        CGSize.zero, CGSize(width: CGFloat.nan, height: .nan), CGSize(width: -4, height: 3),
        CGSize(width: CGFloat.infinity, height: 3),
    ])
    func anIntrinsicSizeWithNoAreaIsTreatedAsUnknown(_ intrinsic: CGSize) async throws {
        let images = TemporaryDirectory("images")
        let name = try SampleImages.writeJPEGs([photo], into: images.url)[0]
        let store = try ImageStore.makeForTesting(root: images.url.appendingPathComponent("cache"))
        let model = CachedImageModel(
            url: images.url.appendingPathComponent(name), intrinsicSize: intrinsic, displayScale: 2, store: store)
        let (before, after) = await boxes(model)
        #expect(before == photo.cgSize)
        #expect(after == photo.cgSize)
        #expect(model.image?.pixelSize == PixelSize(width: 600, height: 400))
    }

    /// The one case that reflows: nothing says how big the image is until it arrives.
    @Test func anUnknownImageReservesNothingBeforeAndItsNaturalSizeAfter() async throws {
        let (images, server, store) = try await servedPhoto()
        // The folder outlives the server, which serves from it.
        defer { withExtendedLifetime(images) { server.stop() } }
        let model = CachedImageModel(url: server.url("/images/0.jpg"), displayScale: 2, store: store)
        var changes = 0
        model.onChange = { changes += 1 }
        let (before, after) = await boxes(model)
        #expect(before == nil)
        #expect(after == photo.cgSize)
        #expect(changes == 1)
    }

    /// A server that sends a size of the wrong aspect: its box is kept, and a `.fill` image covers
    /// it with its real aspect, which the first image shows.
    @Test func aWrongAspectIntrinsicSizeIsTheBoxBeforeAndAfterAFillHydration() async throws {
        let (images, server, store) = try await servedPhoto()
        // The folder outlives the server, which serves from it.
        defer { withExtendedLifetime(images) { server.stop() } }
        let intrinsic = CGSize(width: 400, height: 400)
        let model = CachedImageModel(
            url: server.url("/images/0.jpg"), intrinsicSize: intrinsic, contentMode: .fill, displayScale: 2,
            store: store)
        #expect(model.reservedSize == intrinsic)
        model.layoutChanged(to: CGSize(width: 150, height: 150))
        await model.load()
        #expect(model.reservedSize == intrinsic)
        // The 3:2 photo covers 150 pt of height: 225 pt wide, 450 px at 2x.
        #expect(model.image?.pixelSize == PixelSize(width: 450, height: 300))
    }

    /// A box not known before is filled in from the image that lands, not from the size the store has
    /// since learned of another version: a user's new avatar (`removeImage(for:)`, then another view's
    /// load of the new picture) while a row still decodes the old one, which that row is then given (a
    /// load under way still delivers its image). Before, the row took the store's size, the new
    /// picture's: a 2:3 box for its 3:2 picture, kept for good, and the 3:2 picture sized as 2:3 (asked
    /// for 67 px in a 100 pt square it fills at 100 px).
    @Test func aBoxFilledInByAnImageIsItsAspectNotThatOfANewerVersionTheStoreKnows() async throws {
        let images = TemporaryDirectory("images")
        let old = try SampleImages.jpeg(width: 1200, height: 800)
        try old.write(to: images.url.appendingPathComponent("avatar.jpg"))
        let server = try await TestHTTPServer(serving: images.url)
        // The folder outlives the server, which serves from it.
        defer { withExtendedLifetime(images) { server.stop() } }
        let gate = GatedDecoder(holdingOnly: old)
        let store = try ImageStore.makeForTesting(root: images.url.appendingPathComponent("cache")) {
            $0.decoder = gate
        }
        let url = server.url("/images/avatar.jpg")
        let model = CachedImageModel(url: url, layoutSize: CGSize(width: 100, height: 100), store: store)
        #expect(model.reservedSize == nil)
        let shown = Task { await model.load() }
        try await waitUntil { gate.enteredCount == 1 }  // the old picture decodes, held
        // The new avatar: the URL forgotten, and another view loads the new picture.
        let newAvatar = try SampleImages.jpeg(width: 600, height: 900, seed: 1)
        try newAvatar.write(to: images.url.appendingPathComponent("avatar.jpg"))
        store.removeImage(for: url)
        let new = try await store.image(for: ImageRequest(url: url, targetWidth: 60))
        #expect(new.pixelSize == PixelSize(width: 60, height: 90))
        try #require(store.cachedPixelSize(for: url) == CGSize(width: 600, height: 900))
        gate.open()
        await shown.value

        let image = try #require(model.image)
        #expect(image.pixelSize == PixelSize(width: 100, height: 67), "the old picture, as documented")
        let box = try #require(model.reservedSize)
        #expect(abs(box.height / box.width - 67.0 / 100) < 0.01, "a box of \(box) for a picture of \(image.pixelSize)")
        #expect(model.targetPixelWidth == 100)
        model.disappear()
    }

    /// An image is taken for a decode of a source exactly when the store would make it: the source itself, or
    /// at a smaller width the height of the source's aspect, rounded, at least 1 pixel. A small decode of
    /// another shape is not taken (a 1-pixel tolerance took a 20x4 picture for one of 200x50, a 4:1 box for
    /// a 5:1 image), nor anything wider than the source.
    @Test func anImageIsADecodeOfASourceExactlyAtTheSizeTheStoreGivesIt() {
        let cases: [(image: CGSize, source: CGSize, expected: Bool)] = [
            (CGSize(width: 100, height: 67), CGSize(width: 1200, height: 800), true),  // 66.67 rounds up
            (CGSize(width: 100, height: 66), CGSize(width: 1200, height: 800), false),
            (CGSize(width: 20, height: 5), CGSize(width: 200, height: 50), true),
            (CGSize(width: 20, height: 4), CGSize(width: 200, height: 50), false),
            (CGSize(width: 100, height: 1), CGSize(width: 10000, height: 10), true),  // 0.1, at least a pixel
            (CGSize(width: 600, height: 900), CGSize(width: 600, height: 900), true),
            (CGSize(width: 1200, height: 1800), CGSize(width: 600, height: 900), false),
            (CGSize(width: 600, height: 899), CGSize(width: 600, height: 900), false),
            (CGSize(width: 60, height: 90), CGSize(width: 0, height: 0), false),
        ]
        for (image, source, expected) in cases {
            #expect(CachedImageModel.couldBeDecode(image, of: source) == expected, "\(image) of \(source)")
        }
    }

    @Test func noURLReservesNothingAndLoadsNothing() async throws {
        let root = TemporaryDirectory("root")
        let store = try ImageStore.makeForTesting(root: root.url)
        let model = CachedImageModel(url: nil, intrinsicSize: CGSize(width: 4, height: 3), store: store)
        model.layoutChanged(to: CGSize(width: 40, height: 30))
        await model.load()
        #expect(model.reservedSize == CGSize(width: 4, height: 3))
        #expect(model.image == nil && model.request == nil && !model.isLoading)
    }
}
