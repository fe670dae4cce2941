import Foundation
import Testing

@testable import AsyncImageCache

/// Downloads ask for no content coding, and a body the server encodes anyway is refused before it is
/// read: images are compressed already, and a gzip body of a few hundred KB can decompress to
/// gigabytes faster than the response-size cap stops it.
@Suite struct HTTPContentEncodingTests {
    @Test func requestsAskForTheBodyAsItIs() async throws {
        let folder = TemporaryDirectory("images")
        let (server, _) = try await TestHTTPServer.servingOneJPEG(in: folder)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        _ = try await store.image(for: ImageRequest(url: server.url("/images/0.jpg"), targetWidth: 32))
        #expect(try await server.acceptEncodings(for: "/images/0.jpg") == ["identity"])
    }

    @Test func anImageEncodedThoughNotAskedForFailsWithAnErrorThatSaysSoAndStoresNothing() async throws {
        let folder = TemporaryDirectory("images")
        let (server, _) = try await TestHTTPServer.servingOneJPEG(in: folder)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let description = await store.expectNetworkErrorStoringNothing(loading: server.url("/gzip/images/0.jpg"))
        #expect(description?.contains("Content-Encoding gzip") == true, "\(description ?? "")")
    }

    @Test func anEncodedErrorPageFailsWithItsStatus() async throws {
        let folder = TemporaryDirectory("images")
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let url = server.url("/gzip-zeros/404/1")
        await #expect(throws: ImageLoadingError.httpStatus(code: 404, url: url)) {
            try await HTTPDataLoader().loadData(for: url)
        }
    }

    #if os(Linux)
    /// A gzip body of 512 MiB of zeros (about 0.5 MB sent). swift-corelibs-foundation decodes it whole
    /// whatever the loader does, as its `cancel()` waits for the body's end; the chunks it hands over are
    /// dropped as they come. Cancelled from the delegate queue, they piled up in it until then: the
    /// resident set grew by the whole body. The loader's release invalidates its session, which waits
    /// for the same end, so the peak is read after it.
    @Test func aCompressionBombIsRefusedWithoutItsBytesPilingUp() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let server = try await TestHTTPServer(serving: folder.url)
            defer { server.stop() }
            let url = server.url("/gzip-zeros/200/512")
            await PeakMemory.expectGrowth(belowMiB: 128, "compression bomb") {
                let loader = HTTPDataLoader()
                await #expect(throws: ImageLoadingError.self) { try await loader.loadData(for: url) }
            }
        }
    }

    /// The same, with a load waiting for the bomb's connection: it is started as the bomb fails, and
    /// `resume()` waits for the work queue as `cancel()` does. Started from the delegate queue, it held
    /// the chunks back just the same. It loads once the bomb is decoded.
    @Test func aLoadWaitingForTheBombsConnectionStartsWithoutItsBytesPilingUp() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let (server, image) = try await TestHTTPServer.servingOneJPEG(in: folder)
            defer { server.stop() }
            let bomb = server.url("/held/bomb/gzip-zeros/200/512")
            try await PeakMemory.expectGrowth(belowMiB: 128, "compression bomb with a load waiting") {
                let loader = HTTPDataLoader.limited(connectionsPerHost: 1)
                let first = Task { try await loader.loadData(for: bomb) }
                try await waitUntil { try await server.hits(for: "/held/bomb/gzip-zeros/200/512") == 1 }
                let second = Task { try await loader.loadData(for: server.url("/images/0.jpg")) }
                try await waitUntil { loader.waitingTaskCount == 1 }
                try await server.release("bomb")
                await #expect(throws: ImageLoadingError.self) { try await first.value }
                #expect(try await second.value == image)
            }
        }
    }
    #endif
}
