import Foundation
import Testing

@testable import AsyncImageCache

/// Servers that keep a download alive forever by sending a little now and then, never idle long
/// enough for the inactivity timeout: the body of an image, an error page, and the body of a
/// redirect the loader refuses. Each ends, and the connection is closed.
///
/// The limit catches a load that never ends. It leaves room for the compression-bomb tests of another
/// suite, which under ThreadSanitizer hold corelibs' shared URLSession queue for about 100 s, and
/// every download in the process waits meanwhile (`scripts/test-tsan` ran into a one-minute limit).
@Suite(.timeLimit(.minutes(3))) struct HTTPDataLoaderDurationTests {
    let directory = TemporaryDirectory("http-duration")
    let server: TestHTTPServer

    init() async throws {
        server = try await TestHTTPServer(serving: directory.url)
    }

    @Test func anImageBodyThatNeverEndsStopsAtTheResourceTimeout() async throws {
        let path = "/trickle/100/200"
        let loader = HTTPDataLoader(timeout: 5, resourceTimeout: 1)
        await #expect(throws: ImageLoadingError.timedOut(server.url(path))) {
            try await loader.loadData(for: server.url(path))
        }
        try await server.waitUntilHungUp(path)
        #expect(loader.unfinishedTaskCount == 0)
    }

    @Test func anErrorPageThatNeverEndsFailsOnItsStatusAndIsHungUpOn() async throws {
        let path = "/trickle/100/500"
        let loader = HTTPDataLoader(timeout: 5, resourceTimeout: 1)
        await #expect(throws: ImageLoadingError.httpStatus(code: 500, url: server.url(path))) {
            try await loader.loadData(for: server.url(path))
        }
        try await server.waitUntilHungUp(path)
        #expect(loader.unfinishedTaskCount == 0)
    }

    /// An error page is read and dropped up to ``HTTPTaskTable/drainLimit`` (64 KiB), then hung up on: the
    /// load failed at its status already. Before, it was read on to the response-size cap (64 MiB by
    /// default) or the resource timeout, an hour here, holding its connection: this test ran into its
    /// time limit. 64 bytes a millisecond come to the limit in about a second.
    @Test func anErrorPageIsHungUpOnOnceItPassesTheDrainLimit() async throws {
        let path = "/trickle/1/404"
        let loader = HTTPDataLoader(timeout: 5, resourceTimeout: 3600)
        await #expect(throws: ImageLoadingError.httpStatus(code: 404, url: server.url(path))) {
            try await loader.loadData(for: server.url(path))
        }
        try await server.waitUntilHungUp(path)
        let sent = try await server.bytesSent(for: path) ?? 0
        #expect(sent > HTTPTaskTable.drainLimit)
        #expect(loader.unfinishedTaskCount == 0)
    }

    /// swift-corelibs-foundation decides on a redirect once its body has ended, so the refusal of
    /// this one (to a `file:` URL) never comes: the load timed out only when the test gave up.
    @Test func aRedirectWhoseBodyNeverEndsTimesOut() async throws {
        let path = "/trickle/100/302"
        let url = server.url(path + "?file%3A%2F%2F%2Fetc%2Fpasswd")
        let loader = HTTPDataLoader(timeout: 5, resourceTimeout: 1)
        await #expect(throws: ImageLoadingError.timedOut(url)) { try await loader.loadData(for: url) }
        try await server.waitUntilHungUp(path)
        #expect(loader.unfinishedTaskCount == 0)
    }

    @Test func theStoreReportsTheTimeoutAndKeepsNothing() async throws {
        var configuration = ImageStore.Configuration(name: "trickle")
        configuration.rootDirectory = directory.url.appendingPathComponent("store")
        configuration.dataLoader = DataLoader(timeout: 5, resourceTimeout: 1)
        let store = try ImageStore(configuration: configuration)
        let url = server.url("/trickle/100/200")
        await #expect(throws: ImageLoadingError.timedOut(url)) {
            try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        }
        #expect(store.cachedOriginalBytes(for: url) == nil)
        #expect(store.cachedPixelSize(for: url) == nil)
    }
}
