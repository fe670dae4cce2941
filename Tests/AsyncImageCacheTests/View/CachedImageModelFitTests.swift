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
}
