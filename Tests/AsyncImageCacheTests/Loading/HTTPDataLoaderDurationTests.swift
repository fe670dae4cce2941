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

    /// Loads `path` (with `query` appended) under a resource timeout of `resourceTimeout` seconds, expecting
    /// the error `expected` makes of its URL, then waits until the server has seen the connection hung up and
    /// checks that the loader has no task left.
    private func expectHangUp(
        loading path: String, query: String = "", resourceTimeout: TimeInterval,
        failingWith expected: (URL) -> ImageLoadingError, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let url = server.url(path + query)
        let loader = HTTPDataLoader(timeout: 5, resourceTimeout: resourceTimeout)
        await #expect(throws: expected(url), sourceLocation: sourceLocation) { try await loader.loadData(for: url) }
        try await server.waitUntilHungUp(path)
        #expect(loader.unfinishedTaskCount == 0, sourceLocation: sourceLocation)
    }

    @Test func anImageBodyThatNeverEndsStopsAtTheResourceTimeout() async throws {
        try await expectHangUp(loading: "/trickle/100/200", resourceTimeout: 1) { .timedOut($0) }
    }

    @Test func anErrorPageThatNeverEndsFailsOnItsStatusAndIsHungUpOn() async throws {
        try await expectHangUp(loading: "/trickle/100/500", resourceTimeout: 1) { .httpStatus(code: 500, url: $0) }
    }

    /// An error page is read and dropped up to ``HTTPTaskTable/drainLimit`` (64 KiB), then hung up on: the
    /// load failed at its status already. Before, it was read on to the response-size cap (64 MiB by
    /// default) or the resource timeout, an hour here, holding its connection: this test ran into its
    /// time limit. 64 bytes a millisecond come to the limit in about a second.
    @Test func anErrorPageIsHungUpOnOnceItPassesTheDrainLimit() async throws {
        let path = "/trickle/1/404"
        try await expectHangUp(loading: path, resourceTimeout: 3600) { .httpStatus(code: 404, url: $0) }
        let sent = try await server.bytesSent(for: path) ?? 0
        #expect(sent > HTTPTaskTable.drainLimit)
    }

    /// swift-corelibs-foundation decides on a redirect once its body has ended, so the refusal of
    /// this one (to a `file:` URL) never comes: the load timed out only when the test gave up.
    @Test func aRedirectWhoseBodyNeverEndsTimesOut() async throws {
        try await expectHangUp(
            loading: "/trickle/100/302", query: "?file%3A%2F%2F%2Fetc%2Fpasswd", resourceTimeout: 1
        ) { .timedOut($0) }
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
