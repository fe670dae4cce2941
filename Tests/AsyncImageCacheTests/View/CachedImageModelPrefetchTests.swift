import Foundation
import Testing

@testable import AsyncImageCache

/// A row prefetched with the requests ``CachedImageModel/request(url:layoutSize:cornerRadius:contentMode:imageSize:maxPixelWidth:displayScale:)``
/// gives is drawn from memory when it appears, even when the prefetch was made before the store knew the
/// image's size (the first time a list is scrolled), which the model knows by then.
@MainActor @Suite(.timeLimit(.minutes(3))) struct CachedImageModelPrefetchTests {
    /// A landscape photo (`0.jpg`, 1200x800) and a portrait one (`1.jpg`, 800x1200) on a loopback server,
    /// and a store that has seen neither.
    struct ServedPhotos {
        let folder = TemporaryDirectory("images")
        let server: TestHTTPServer
        let store: ImageStore

        init() async throws {
            try SampleImages.writeJPEGs(
                [PixelSize(width: 1200, height: 800), PixelSize(width: 800, height: 1200)], into: folder.url)
            server = try await TestHTTPServer(serving: folder.url)
            store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        }

        /// Prefetches the request the recipe gives for a 100 pt square at 2x, with the size the store knows
        /// (none yet), and waits until memory has its image.
        func prefetch(
            _ path: String, contentMode: CachedImageModel.ContentMode, cornerRadius: CGFloat
        ) async throws -> ImageRequest {
            let url = server.url(path)
            #expect(store.cachedPixelSize(for: url) == nil)
            let request = try #require(
                CachedImageModel.request(
                    url: url, layoutSize: CGSize(width: 100, height: 100), cornerRadius: cornerRadius,
                    contentMode: contentMode, imageSize: store.cachedPixelSize(for: url), displayScale: 2))
            store.startPrefetching([request])
            let store = store
            try await waitUntil {
                store.cachedImage(for: request) != nil && store.prefetches.withLock { $0.running.isEmpty }
            }
            return request
        }

        func stop() {
            withExtendedLifetime(folder) { server.stop() }
        }
    }

    /// `.fill` (the view's default) with a landscape photo in a square: the prefetch asked for the frame's
    /// 200 px; the row's model, knowing the 3:2 shape, draws it 150 pt wide, so asks for 300 px. Before, it
    /// found no image in memory and showed the placeholder until its load landed: a prefetched row never a hit.
    @Test func aFilledRowPrefetchedBeforeTheSizeWasKnownIsDrawnAtOnceThenSharpened() async throws {
        let photos = try await ServedPhotos()
        defer { photos.stop() }
        let request = try await photos.prefetch("/images/0.jpg", contentMode: .fill, cornerRadius: 0)
        #expect(request.targetPixelWidth == 200)
        let model = CachedImageModel(
            url: request.url, contentMode: .fill, displayScale: 2, layoutSize: CGSize(width: 100, height: 100),
            store: photos.store)
        #expect(model.image?.pixelSize == PixelSize(width: 200, height: 133), "the prefetched image, at once")
        #expect(model.request?.targetPixelWidth == 300)
        await model.load()
        #expect(model.image?.pixelSize == PixelSize(width: 300, height: 200))
        #expect(try await photos.server.hits(for: "/images/0.jpg") == 1, "decoded from the prefetched bytes")
        model.disappear()
    }

    /// `.fit` with rounded corners and a portrait photo in a square: the prefetch asked for 200 px with 20 px
    /// corners; the row's model draws it 66.7 pt wide, so asks for 134 px with 20 px corners, which the
    /// prefetched image, drawn that narrow, does not have. Before, the placeholder showed until the load landed.
    @Test func aRoundedFitRowPrefetchedBeforeTheSizeWasKnownIsDrawnAtOnceThenGivenItsCorners() async throws {
        let photos = try await ServedPhotos()
        defer { photos.stop() }
        let request = try await photos.prefetch("/images/1.jpg", contentMode: .fit, cornerRadius: 10)
        #expect(request == ImageRequest(url: request.url, targetWidth: 200, cornerRadius: 20))
        let model = CachedImageModel(
            url: request.url, cornerRadius: 10, displayScale: 2, layoutSize: CGSize(width: 100, height: 100),
            store: photos.store)
        #expect(model.image?.pixelSize == PixelSize(width: 200, height: 300), "the prefetched image, at once")
        await model.load()
        #expect(model.lastRequest == ImageRequest(url: request.url, targetWidth: 134, cornerRadius: 20))
        #expect(model.image?.pixelSize == PixelSize(width: 134, height: 201))
        #expect(try await photos.server.hits(for: "/images/1.jpg") == 1, "decoded from the prefetched bytes")
        model.disappear()
    }
}
