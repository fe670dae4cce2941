import Foundation
import Testing

@testable import AsyncImageCache

/// `.fill`: the image covers its frame, so an image wider than the frame's aspect is drawn wider
/// than the frame, and needs the pixels of the width it is drawn at.
@MainActor @Suite(.timeLimit(.minutes(3))) struct CachedImageModelFillTests {
    /// A 2:1 photo as a local file and on a loopback server, and a store whose decodes are counted
    /// and can be held at a gate.
    private struct WidePhoto {
        let folder = TemporaryDirectory("images")
        let size: PixelSize
        let file: URL
        let server: TestHTTPServer
        let decoder = GatedDecoder(open: true)
        let store: ImageStore

        init(size: PixelSize = PixelSize(width: 1600, height: 800)) async throws {
            self.size = size
            let name = try SampleImages.writeJPEGs([size], into: folder.url)[0]
            file = folder.url.appendingPathComponent(name)
            server = try await TestHTTPServer(serving: folder.url)
            let decoder = decoder
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decoder = decoder
            }
        }

        /// The photo on the server: the store knows nothing of its size before the first load.
        var remote: URL { server.url("/images/0.jpg") }

        /// Stops the server; the folder it serves from outlives it.
        func stop() {
            withExtendedLifetime(folder) { server.stop() }
        }
    }

    private let square = CGSize(width: 100, height: 100)

    /// A `.fill` model of the photo's local file, whose size the store reads from its header before
    /// the first load, laid out in `square` at 2x, that has loaded its image.
    private func filled(
        _ photo: WidePhoto, cornerRadius: CGFloat = 0, maxPixelWidth: CGFloat? = nil
    ) async -> CachedImageModel {
        let model = CachedImageModel(
            url: photo.file, cornerRadius: cornerRadius, contentMode: .fill, maxPixelWidth: maxPixelWidth,
            displayScale: 2, store: photo.store)
        model.layoutChanged(to: square)
        await model.load()
        return model
    }

    @Test func aWideImageFillingASquareFrameAsksForTheWidthItIsDrawnAt() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let model = await filled(photo)
        // Its height fills the 100 pt: it is 200 pt wide on screen, 400 px at 2x, not the frame's 200 px.
        #expect(model.lastRequest?.targetPixelWidth == 400)
        #expect(model.image?.pixelSize == PixelSize(width: 400, height: 200))
        #expect(photo.decoder.enteredCount == 1)
    }

    @Test func anIntrinsicSizeGivesTheAspectBeforeTheStoreKnowsIt() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let model = CachedImageModel(
            url: photo.remote, intrinsicSize: photo.size.cgSize, contentMode: .fill, displayScale: 2,
            store: photo.store)
        model.layoutChanged(to: square)
        #expect(model.request?.targetPixelWidth == 400)
        await model.load()
        #expect(model.image?.pixelSize == PixelSize(width: 400, height: 200))
        #expect(photo.decoder.enteredCount == 1)
    }

    @Test func anUnknownAspectAsksAgainOnceTheImageShowsItAndKeepsDrawingTheFirst() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let model = CachedImageModel(url: photo.remote, contentMode: .fill, displayScale: 2, store: photo.store)
        var drawn: [Int?] = []
        model.onChange = { drawn.append(model.image?.pixelSize.width) }
        model.layoutChanged(to: square)
        #expect(model.request?.targetPixelWidth == 200)  // the frame's width: nothing says more yet
        await model.load()
        #expect(drawn == [200, 400])  // straight from the first image to the wider one
        #expect(model.lastRequest?.targetPixelWidth == 400)
        #expect(model.image?.pixelSize == PixelSize(width: 400, height: 200))
        #expect(photo.decoder.enteredCount == 2)
    }

    /// `CachedImage` reserves the image's box once its size is known: the frame takes the image's aspect,
    /// so the wider load the first image started is no longer needed.
    @Test func aFrameThatTakesTheImagesAspectDropsTheWiderLoad() async throws {
        let photo = try await WidePhoto()
        defer {
            photo.decoder.open()
            photo.stop()
        }
        let model = CachedImageModel(url: photo.remote, contentMode: .fill, displayScale: 2, store: photo.store)
        // The wider decode waits at the gate until the frame has changed.
        model.onChange = { photo.decoder.close() }
        model.layoutChanged(to: square)
        let hydration = Task { await model.load() }
        try await waitUntil { @MainActor in model.image != nil }
        #expect(model.isLoading)
        #expect(model.lastRequest?.targetPixelWidth == 400)
        model.layoutChanged(to: CGSize(width: 100, height: 50))
        #expect(!model.isLoading)
        // Were the load still going, it would land now and draw the 400 px image.
        photo.decoder.open()
        await hydration.value
        #expect(model.image?.pixelSize == PixelSize(width: 200, height: 100))
    }

    @Test func aTallImageFillingASquareFrameAsksForTheFramesWidth() async throws {
        let photo = try await WidePhoto(size: PixelSize(width: 800, height: 1600))
        defer { photo.stop() }
        let model = await filled(photo)
        #expect(model.lastRequest?.targetPixelWidth == 200)
        #expect(model.image?.pixelSize == PixelSize(width: 200, height: 400))
    }

    /// Layout rounds a box of the image's aspect to whole pixels, a little taller or shorter.
    @Test func aBoxOfTheImagesAspectRoundedToWholePixelsAsksForItsOwnWidth() {
        let url = URL(fileURLWithPath: "/photo.jpg")
        func width(_ frame: CGSize, scale: CGFloat = 3) -> Int? {
            CachedImageModel.request(
                url: url, layoutSize: frame, contentMode: .fill, imageSize: CGSize(width: 2400, height: 1599),
                displayScale: scale)?.targetPixelWidth
        }
        // 100 pt wide: 66.625 pt, rounded up to 200 px at 3x, is a third of a pixel taller than the image.
        #expect(width(CGSize(width: 100, height: 200.0 / 3)) == 300)
        #expect(width(CGSize(width: 100, height: 66.625)) == 300)
        // Half a pixel taller than the image or more (here 0.6 px), it is drawn wider.
        #expect(width(CGSize(width: 100, height: 66.625 + 0.6 / 3)) == 301)
        #expect(width(CGSize(width: 100, height: 100)) == 451)  // 150.09 pt
    }

    /// A size of positive, finite sides whose aspect overflows once it multiplies the frame (a
    /// server's garbage): the widest decode there is, as for a frame that wide, never no request.
    @Test func anIntrinsicSizeOfAnAspectBeyondAnyNumberStillAsksForTheImage() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let model = CachedImageModel(
            url: photo.file, intrinsicSize: CGSize(width: 1e300, height: 1e-10), contentMode: .fill,
            displayScale: 2, layoutSize: square, store: photo.store)
        // Before: 100 pt x 1e310 was infinite, so there was no request, and load() never returned.
        let request = try #require(model.request)
        #expect(request.targetPixelWidth == 1_000_000)
        await model.load()
        #expect(model.image?.pixelSize == photo.size)
    }

    @Test func fitStillAsksForTheFramesWidth() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let model = CachedImageModel(url: photo.file, displayScale: 2, store: photo.store)
        model.layoutChanged(to: square)
        await model.load()
        #expect(model.lastRequest?.targetPixelWidth == 200)
        #expect(model.image?.pixelSize == PixelSize(width: 200, height: 100))
    }

    @Test func cornersAreInPointsOfTheWidthTheImageIsDrawnAt() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let model = await filled(photo, cornerRadius: 10)
        #expect(model.lastRequest == ImageRequest(url: photo.file, targetWidth: 400, cornerRadius: 20))
    }

    @Test func maxPixelWidthCapsTheWidthAndScalesTheRadiusAlike() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let model = await filled(photo, cornerRadius: 10, maxPixelWidth: 300)
        // 10 pt over the 200 pt the image is drawn at, from 300 px: 15 px.
        #expect(model.lastRequest == ImageRequest(url: photo.file, targetWidth: 300, cornerRadius: 15))
        #expect(model.image?.pixelSize == PixelSize(width: 300, height: 150))
    }

    @Test func aRowPrefetchedWithTheSameSizeIsDrawnFromMemoryWithoutASecondDecode() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let request = try #require(
            CachedImageModel.request(
                url: photo.remote, layoutSize: square, cornerRadius: 6, contentMode: .fill,
                imageSize: photo.size.cgSize, displayScale: 2))
        #expect(request == ImageRequest(url: photo.remote, targetWidth: 400, cornerRadius: 12))
        _ = try await photo.store.image(for: request)
        let model = CachedImageModel(
            url: photo.remote, intrinsicSize: photo.size.cgSize, cornerRadius: 6, contentMode: .fill,
            displayScale: 2, layoutSize: square, store: photo.store)
        #expect(model.request == request)
        #expect(model.image?.pixelSize.width == 400)
        #expect(photo.decoder.enteredCount == 1)
    }
}

extension CachedImageModelFillTests {
    /// With rounded corners, the corners that show are rounded whatever the frame's shape: where
    /// `.fill` draws the image past the frame, the frame cuts off the image's own corners, and the
    /// model says to clip to rounded ones instead; where the image's own corners show, it says a
    /// plain clip, so their edges are not smoothed a second time.
    @Test func theVisibleCornersOfAFilledFrameAreRoundedWhateverItsShape() async throws {
        let photo = try await WidePhoto()  // 2:1
        defer { photo.stop() }
        let frames = [
            CGSize(width: 100, height: 100), CGSize(width: 200, height: 100), CGSize(width: 300, height: 100),
            CGSize(width: 100, height: 200), CGSize(width: 201, height: 100),
        ]
        for frame in frames {
            let model = CachedImageModel(
                url: photo.file, cornerRadius: 10, contentMode: .fill, displayScale: 2, store: photo.store)
            model.layoutChanged(to: frame)
            await model.load()
            let image = try #require(model.image)
            // The image's pixel at the frame's top-left corner, drawn to cover the frame and centred.
            let size = image.pixelSize
            let factor = max(frame.width / CGFloat(size.width), frame.height / CGFloat(size.height))
            let x = Int(((CGFloat(size.width) * factor - frame.width) / 2 / factor).rounded(.down))
            let y = Int(((CGFloat(size.height) * factor - frame.height) / 2 / factor).rounded(.down))
            let ownCornerShows = image.pixel(x: x, y: y).alpha < 128
            #expect(
                ownCornerShows != (model.frameCornerRadius == 10),
                "frame \(frame), image \(size), corner pixel (\(x), \(y)): clip \(model.frameCornerRadius)")
        }
        // The shapes that cut off the image's corners are those of another aspect than 2:1.
        let square = CachedImageModel(
            url: photo.file, cornerRadius: 10, contentMode: .fill, displayScale: 2, store: photo.store)
        square.layoutChanged(to: CGSize(width: 100, height: 100))
        await square.load()
        #expect(square.frameCornerRadius == 10)
        // A frame of the image's own shape shows its corners; a change of shape says to redraw.
        var changes = 0
        square.onChange = { changes += 1 }
        square.layoutChanged(to: CGSize(width: 200, height: 100))
        #expect(square.frameCornerRadius == 0)
        #expect(changes >= 1)
    }

    /// A corner radius that is not finite is none, in the clip as in the pixels. Before, `.infinity` gave
    /// square pixels and, where `.fill` cut off the image's corners, a clip of half the frame's height (a
    /// capsule in a wide frame), so the corners were round in one frame and square in the next.
    @Test func anInfiniteCornerRadiusIsNoneInTheClipAsInThePixels() async throws {
        let photo = try await WidePhoto()  // 2:1
        defer { photo.stop() }
        let model = CachedImageModel(
            url: photo.file, cornerRadius: .infinity, contentMode: .fill, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 100, height: 100))
        await model.load()
        let image = try #require(model.image)
        #expect(image.pixel(x: 0, y: 0).alpha == 255, "the pixels have rounded corners")
        #expect(model.frameCornerRadius == 0)
    }

    /// The largest finite radius (`.greatestFiniteMagnitude`, an idiom for "as round as it goes") is the
    /// largest in the pixels at every display scale, as ``ImageRequest`` makes it, and as the clip already
    /// takes it. Before, at 2x it was doubled to infinity, which a request takes for none: square pixels at
    /// 2x where 1x rounded them, and under a `.fill` clip of half the frame.
    @Test(arguments: [nil, 80] as [CGFloat?])
    func theLargestFiniteCornerRadiusIsRoundAtEveryScale(maxPixelWidth: CGFloat?) async throws {
        let photo = try await WidePhoto()  // 2:1
        defer { photo.stop() }
        for scale in [1, 2] as [CGFloat] {
            let model = CachedImageModel(
                url: photo.file, cornerRadius: .greatestFiniteMagnitude, maxPixelWidth: maxPixelWidth,
                displayScale: scale, store: photo.store)
            model.layoutChanged(to: square)
            #expect(model.request?.cornerPixelRadius == 1_000_000, "at \(scale)x")
            await model.load()
            let image = try #require(model.image)
            #expect(image.pixel(x: 0, y: 0).alpha == 0, "square corners at \(scale)x")
        }
    }

    /// A radius "large enough" gives round ends at every width (corners are cut with the radius clamped
    /// to half the shorter side): a frame that shrinks keeps the image it has, whose ends stay round drawn
    /// smaller. Before, the radius was compared as named, so each smaller frame needed an image of its own
    /// and decoded again: every frame of a shrinking animation, for a picture of the same shape.
    @Test func aShrinkingFrameKeepsAnImageWithRoundEndsWithoutDecodingAgain() async throws {
        let photo = try await WidePhoto()  // 2:1
        defer { photo.stop() }
        let model = await filled(photo, cornerRadius: 1000)
        let image = try #require(model.image)
        #expect(image.pixelSize == PixelSize(width: 400, height: 200))
        for side in [99, 90, 64] as [CGFloat] {
            model.layoutChanged(to: CGSize(width: side, height: side))
            let request = try #require(model.request)
            #expect(!model.needsImage(for: request), "\(side) pt: \(request)")
            await model.load()
            #expect(model.image == image, "\(side) pt")
        }
        #expect(photo.decoder.enteredCount == 1)
        // Corners named smaller than the ends still need their own image.
        let smaller = ImageRequest(url: photo.file, targetWidth: 256, cornerRadius: 20)
        #expect(model.needsImage(for: smaller))
    }

    @Test func squareCornersFittedImagesAndNoImageNeedNoRoundedClip() async throws {
        let photo = try await WidePhoto()
        defer { photo.stop() }
        let square = CGSize(width: 100, height: 100)
        let unloaded = CachedImageModel(
            url: photo.file, cornerRadius: 10, contentMode: .fill, displayScale: 2, layoutSize: square,
            store: photo.store)
        #expect(unloaded.image == nil)
        #expect(unloaded.frameCornerRadius == 0)
        #expect(await filled(photo).frameCornerRadius == 0)  // square corners
        let fitted = CachedImageModel(
            url: photo.file, cornerRadius: 10, contentMode: .fit, displayScale: 2, store: photo.store)
        fitted.layoutChanged(to: square)
        await fitted.load()
        #expect(fitted.image != nil)
        #expect(fitted.frameCornerRadius == 0)  // letterboxed: its own corners show
        // A radius past half the frame is the most a rounded rectangle takes.
        let round = CachedImageModel(
            url: photo.file, cornerRadius: 500, contentMode: .fill, displayScale: 2, store: photo.store)
        round.layoutChanged(to: square)
        await round.load()
        #expect(round.frameCornerRadius == 50)
    }
}
