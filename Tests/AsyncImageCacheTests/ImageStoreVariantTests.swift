import Foundation
import Testing

@testable import AsyncImageCache

/// One decode serves smaller frames that look the same; larger frames get a larger decode.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreVariantTests {
    private func makeStore(_ folder: TemporaryDirectory, decoder: any ImageDecoding = CountingDecoder()) throws
        -> ImageStore
    {
        try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) { $0.decoder = decoder }
    }

    /// Expects memory to answer `image` for `url` at each (width, radius) in pixels.
    private func expect(_ store: ImageStore, toServe image: PlatformImage, of url: URL, at requests: [(Int, Int)]) {
        for (width, radius) in requests {
            let request = ImageRequest(url: url, targetWidth: CGFloat(width), cornerRadius: CGFloat(radius))
            let served = store.cachedImage(for: request) == image
            #expect(served, "\(request)")
        }
    }

    @Test func aLargerDecodeServesASmallerRequestWithoutDecodingAgain() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 800, height: 400)], into: folder.url)
        let decoder = CountingDecoder()
        let store = try makeStore(folder, decoder: decoder)
        let url = folder.url.appendingPathComponent("0.jpg")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 400))
        #expect(
            store.cachedImage(for: ImageRequest(url: url, targetWidth: 200))?.pixelSize
                == PixelSize(width: 400, height: 200))
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 200)).pixelSize
                == PixelSize(width: 400, height: 200))
        #expect(decoder.count == 1)
    }

    /// A decode too large for the memory budget is handed out and not kept; the smaller variants of the
    /// URL, which it would have replaced, stay (a full-size photo opened from a grid leaves its thumbnail).
    @Test func aDecodeTooLargeToKeepLeavesTheSmallerVariantsInMemory() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 800, height: 400)], into: folder.url)
        let decoder = CountingDecoder()
        // Room for the 100x50 variant (20 KB), not for the natural 800x400 one (1.28 MB).
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = decoder
            $0.memoryByteLimit = 200_000
        }
        let url = folder.url.appendingPathComponent("0.jpg")
        let thumbnail = ImageRequest(url: url, targetWidth: 100)
        _ = try await store.image(for: thumbnail)
        #expect(try await store.image(for: ImageRequest(url: url)).pixelSize == PixelSize(width: 800, height: 400))
        #expect(store.cachedImage(for: ImageRequest(url: url)) == nil)  // over the budget: not kept
        let kept = store.cachedImage(for: thumbnail)?.pixelSize
        #expect(
            kept == PixelSize(width: 100, height: 50),
            "the thumbnail left memory with the decode that did not fit: \(String(describing: kept))")
        _ = try await store.image(for: thumbnail)
        #expect(decoder.count == 2)
    }

    @Test func cornersMustScaleToTheRequestedRadius() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 800, height: 400)], into: folder.url)
        let store = try makeStore(folder)
        let url = folder.url.appendingPathComponent("0.jpg")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 400, cornerRadius: 20))
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 200, cornerRadius: 10)) != nil)
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 200, cornerRadius: 20)) == nil)
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 200)) == nil)
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 100, cornerRadius: 5)) != nil)
    }

    /// Corners are cut with the radius clamped to half the shorter side, so a radius "large enough" makes
    /// round ends at any width: a decode with such corners serves every smaller request whose corners also
    /// come out round, whatever radius it names. Before, the radii were compared as named, and a row with
    /// round ends decoded again at each width it shrank to (a resize, an animation).
    @Test func roundEndsServeEverySmallerRequestWithRoundEnds() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 800, height: 400)], into: folder.url)
        let decoder = CountingDecoder()
        let store = try makeStore(folder, decoder: decoder)
        let url = folder.url.appendingPathComponent("0.jpg")
        // 200x100 with 2000 px corners: round ends, 50 px.
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 200, cornerRadius: 2000))
        #expect(image.pixelSize == PixelSize(width: 200, height: 100))
        // At 198 px the ends are 49.5 px round, as they are drawn from this image; at 150 px 37.5 px.
        expect(
            store, toServe: image, of: url,
            at: [(198, 2000), (198, 50), (150, 2000), (150, 38), (150, 37), (40, 10), (40, 500)])
        // Not corners that come out smaller than the ends, nor none, nor a wider image.
        for (width, radius) in [(150, 20), (150, 36), (198, 0), (201, 2000)] {
            let request = ImageRequest(url: url, targetWidth: CGFloat(width), cornerRadius: CGFloat(radius))
            #expect(store.cachedImage(for: request)?.pixelSize == nil, "\(request)")
        }
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 199, cornerRadius: 2000))
        #expect(decoder.count == 1)
    }

    @Test func aSmallerDecodeNeverServesALargerRequest() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 800, height: 400)], into: folder.url)
        let store = try makeStore(folder)
        let url = folder.url.appendingPathComponent("0.jpg")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 200))
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 201)) == nil)
        #expect(store.cachedImage(for: ImageRequest(url: url)) == nil)
    }

    @Test func aLargerDecodeReplacesTheSmallerOneWhichKeepsDrawingUntilItLands() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 800, height: 400)], into: folder.url)
        let gate = GatedDecoder(open: true)
        let store = try makeStore(folder, decoder: gate)
        let url = folder.url.appendingPathComponent("0.jpg")
        let small = ImageRequest(url: url, targetWidth: 200)
        _ = try await store.image(for: small)
        gate.close()
        let larger = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 400)) }
        try await waitUntil { gate.enteredCount == 2 }
        // The larger decode is under way: the smaller image still draws.
        #expect(store.cachedImage(for: small)?.pixelSize.width == 200)
        gate.open()
        #expect(try await larger.value.pixelSize.width == 400)
        #expect(store.cachedImage(for: small)?.pixelSize.width == 400)
        #expect(store.variants.count == 1)
    }

    /// A smaller decode that lands after a larger one of the same look (another row asked for it first, or
    /// its waiter stayed) is handed to its waiters, not kept: the larger one already serves it. Before, it
    /// was kept beside the larger one and, with room for only one of them, evicted it.
    @Test func aSmallerDecodeLandingLateNeverReplacesALargerOne() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 2400, height: 1600)], into: folder.url)
        let rows = RowGate()
        // Room for the 1000x667 variant (2.67 MB), not for it and the 500x333 one (0.67 MB) beside it.
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decodeRowObserver = rows.observer
            $0.decodeConcurrency = 2
            $0.memoryByteLimit = 3_000_000
        }
        let url = folder.url.appendingPathComponent("0.jpg")
        let (small, large) = (ImageRequest(url: url, targetWidth: 500), ImageRequest(url: url, targetWidth: 1000))
        rows.arm()
        let late = Task { try await store.image(for: small) }
        try await waitUntil { rows.parkedCount == 1 }
        #expect(try await store.image(for: large).pixelSize.width == 1000)
        rows.open()
        #expect(try await late.value.pixelSize.width == 500)  // its waiter gets what it asked for
        let kept = store.cachedImage(for: large)?.pixelSize.width
        #expect(
            kept == 1000, "the late 500 px decode pushed the 1000 px one out of memory: \(String(describing: kept))")
        #expect(store.cachedImage(for: small)?.pixelSize.width == 1000)
        #expect(store.variants.count == 1)
    }

    @Test func remoteImagesShareDecodesAcrossWidthsToo() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 640, height: 480)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let decoder = CountingDecoder()
        let store = try makeStore(folder, decoder: decoder)
        let url = server.url("/images/0.jpg")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 320, cornerRadius: 16))
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 160, cornerRadius: 8))
        #expect(decoder.count == 1)
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 480, cornerRadius: 24))
        #expect(decoder.count == 2)
        #expect(store.variants.count == 1)  // the 480 px decode replaced the 320 px one
        #expect(
            store.cachedImage(for: ImageRequest(url: url, targetWidth: 320, cornerRadius: 16))?.pixelSize.width == 480)
        #expect(try await server.hits(for: "/images/0.jpg") == 1)
    }

    /// The image a fresh store prepares for `request`: nothing in memory to serve it.
    private func freshlyPrepared(_ request: ImageRequest) async throws -> PlatformImage {
        let folder = TemporaryDirectory("reference")
        return try await makeStore(folder).image(for: request)
    }

    @Test func aSourceNarrowerThanTheRequestGetsCornersInProportion() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 120, height: 80)], into: folder.url)
        let decoder = CountingDecoder()
        let store = try makeStore(folder, decoder: decoder)
        let url = folder.url.appendingPathComponent("0.jpg")
        // Drawn at 600 px, 20 px corners there are 4 px on the 120 px source.
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 600, cornerRadius: 20))
        #expect(image.pixelSize == PixelSize(width: 120, height: 80))
        // (Compared as Bools: a failure would print every pixel.)
        let fourPixels = try await freshlyPrepared(ImageRequest(url: url, targetWidth: 120, cornerRadius: 4))
        let twentyPixels = try await freshlyPrepared(ImageRequest(url: url, targetWidth: 120, cornerRadius: 20))
        #expect(fourPixels != twentyPixels ? image == fourPixels : false)
        // Every request that would prepare the same image, or a smaller one alike, is served by it.
        expect(store, toServe: image, of: url, at: [(120, 4), (300, 10), (1000, 33), (60, 2)])
        // Not those whose corners would differ: 8 px, none, 20 px on the source.
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 300, cornerRadius: 20))?.pixelSize == nil)
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 600))?.pixelSize == nil)
        #expect(store.cachedImage(for: ImageRequest(url: url, cornerRadius: 20))?.pixelSize == nil)
        #expect(decoder.count == 1)
    }

    @Test func anImageAtItsNaturalSizeServesEveryWiderRequest() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 120, height: 80)], into: folder.url)
        let decoder = CountingDecoder()
        let store = try makeStore(folder, decoder: decoder)
        let url = folder.url.appendingPathComponent("0.jpg")
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 200))
        #expect(image.pixelSize.width == 120)
        for width in [120, 1000, nil] {
            let request = ImageRequest(url: url, targetWidth: width.map { CGFloat($0) })
            let served = store.cachedImage(for: request) == image
            #expect(served, "\(request)")
        }
        let loaded = try await store.image(for: ImageRequest(url: url, targetWidth: 480)) == image
        #expect(loaded)
        #expect(decoder.count == 1)
        // An exact fit is not the natural size: a 120 px request of a 240 px source serves no wider one.
        try SampleImages.writeJPEGs([PixelSize(width: 240, height: 160)], into: folder.url)
        let larger = try makeStore(TemporaryDirectory("variants"))
        _ = try await larger.image(for: ImageRequest(url: url, targetWidth: 120))
        #expect(larger.cachedImage(for: ImageRequest(url: url, targetWidth: 121))?.pixelSize == nil)
        #expect(larger.cachedImage(for: ImageRequest(url: url))?.pixelSize == nil)
    }
}
