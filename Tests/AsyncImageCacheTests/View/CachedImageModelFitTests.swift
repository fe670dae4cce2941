import Foundation
import Testing

@testable import AsyncImageCache

/// `.fit`: an image taller in aspect than its frame is drawn at the frame's height, narrower than the
/// frame, and needs the pixels, and the corners, of the width it is drawn at.
@MainActor @Suite(.timeLimit(.minutes(3))) struct CachedImageModelFitTests {
    /// A 600x1200 (1:2) photo in a square 100 pt frame at 2x (a grid cell) is drawn 50 pt wide. Before, the
    /// model asked for the frame's 200 px: 4 times the pixels, and 20 px corners drawn over 100 px, 5 pt
    /// on screen instead of 10.
    @Test func aTallImageFittedInASquareFrameAsksForTheWidthItIsDrawnAt() async throws {
        let photo = try CachedImageModelLoadingTests.LocalPhoto(size: PixelSize(width: 600, height: 1200))
        let model = CachedImageModel(url: photo.url, cornerRadius: 10, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 100, height: 100))
        await model.load()
        #expect(model.lastRequest == ImageRequest(url: photo.url, targetWidth: 100, cornerRadius: 20))
        #expect(model.image?.pixelSize == PixelSize(width: 100, height: 200))
        #expect(photo.decoder.count == 1)
        // The static request a prefetch makes is the same.
        #expect(
            CachedImageModel.request(
                url: photo.url, layoutSize: CGSize(width: 100, height: 100), cornerRadius: 10,
                imageSize: CGSize(width: 600, height: 1200), displayScale: 2) == model.lastRequest)
    }

    /// A server that sends the stored size of a photo its EXIF orientation turns upright (1200x600 for a
    /// 600x1200 picture): its box is kept, and once the image shows its real shape the model asks for the
    /// width it is drawn at in that box. Before, it kept the box's 600 px, drawn over 150 px: 20 px
    /// corners 2.5 pt on screen instead of 10.
    @Test func anIntrinsicSizeOfTheWrongShapeIsCorrectedByTheImage() async throws {
        let photo = try CachedImageModelLoadingTests.LocalPhoto(size: PixelSize(width: 600, height: 1200))
        let box = CGSize(width: 1200, height: 600)
        let model = CachedImageModel(
            url: photo.url, intrinsicSize: box, cornerRadius: 10, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 300, height: 150))
        await model.load()
        #expect(model.reservedSize == box)
        #expect(model.lastRequest == ImageRequest(url: photo.url, targetWidth: 150, cornerRadius: 20))
        #expect(model.image?.pixelSize == PixelSize(width: 150, height: 300))
    }

    /// A size of positive, finite sides so tall that the width it is drawn at underflows to nothing (a
    /// server's garbage): the narrowest decode there is, never no request.
    @Test func anIntrinsicSizeOfAnAspectBeyondAnyNumberStillAsksForTheImage() throws {
        let photo = try CachedImageModelLoadingTests.LocalPhoto(size: PixelSize(width: 60, height: 40))
        let model = CachedImageModel(
            url: photo.url, intrinsicSize: CGSize(width: .leastNonzeroMagnitude, height: 1e10), displayScale: 2,
            layoutSize: CGSize(width: 100, height: 100), store: photo.store)
        #expect(model.request?.targetPixelWidth == 1)
    }

    /// A size of positive, finite sides whose aspect is plain (15:1 or 1:15) but whose sides are so large
    /// that the frame's side times one of them overflows (a server's garbage): the width comes from the
    /// aspect, as for any size of that shape. Before, 100 pt x 1e307 was infinite: a wide image fitted in
    /// a square made no request, and its load() never returned; a tall one likewise; `.fill` asked for the
    /// frame's 200 px instead of the 3,000 px of the 1,500 pt it is drawn at.
    @Test func aSizeOfHugeSidesAsksForTheWidthOfItsAspect() async throws {
        let photo = try CachedImageModelLoadingTests.LocalPhoto(size: PixelSize(width: 60, height: 40))
        let square = CGSize(width: 100, height: 100)
        let wide = CGSize(width: 1.5e308, height: 1e307)
        let tall = CGSize(width: 1e307, height: 1.5e308)
        func width(_ size: CGSize, _ mode: CachedImageModel.ContentMode) -> Int? {
            CachedImageModel(
                url: photo.url, intrinsicSize: size, contentMode: mode, displayScale: 2, layoutSize: square,
                store: photo.store
            ).request?.targetPixelWidth
        }
        #expect(width(wide, .fit) == 200)
        #expect(width(tall, .fit) == 14)  // 100 pt / 15 = 6.67 pt, 13.3 px
        #expect(width(wide, .fill) == 3000)
        #expect(width(tall, .fill) == 200)
        // The static request a prefetch makes is the same.
        #expect(
            CachedImageModel.request(
                url: photo.url, layoutSize: square, imageSize: wide, displayScale: 2)?.targetPixelWidth == 200)
        let model = CachedImageModel(
            url: photo.url, intrinsicSize: wide, displayScale: 2, layoutSize: square, store: photo.store)
        _ = try #require(model.request)  // without one, load() waits for a layout that never gives one
        await model.load()
        #expect(model.image?.pixelSize == PixelSize(width: 60, height: 40))
    }
}
