import Foundation
import Testing

@testable import AsyncImageCache

/// One decode serves smaller frames that look the same; larger frames get a larger decode.
@Suite struct ImageStoreVariantTests {
    private func makeStore(_ folder: TemporaryDirectory, decoder: any ImageDecoding = CountingDecoder()) throws
        -> ImageStore
    {
        try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) { $0.decoder = decoder }
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

    @Test func remoteImagesShareDecodesAcrossWidthsToo() async throws {
        let folder = TemporaryDirectory("variants")
        try SampleImages.writeJPEGs([PixelSize(width: 640, height: 480)], into: folder.url)
        let server = try TestHTTPServer(serving: folder.url)
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
}
