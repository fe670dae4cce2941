import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import AsyncImageCache

/// A loader given a session configuration that carries a `URLCache` (an ephemeral one does) keeps no
/// second cache beside the store's: every load reaches the server, which decides, and a cancellation
/// cannot race the task's end through the cache's lookup.
@Suite(.timeLimit(.minutes(2))) struct HTTPDataLoaderSessionCacheTests {
    let directory = TemporaryDirectory("http-session-cache")
    let server: TestHTTPServer
    let first = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
    let second = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) })

    init() async throws {
        try first.write(to: directory.url.appendingPathComponent("photo.jpg"))
        server = try await TestHTTPServer(serving: directory.url)
    }

    /// Counts the session's lookups. On Linux each one answers on another thread, after which the
    /// task's cancellation is queued behind the task's own end and traps in swift-corelibs-foundation
    /// when the end wins ("Trying to access a behaviour for a task that in not in the registry"): about
    /// half the runs of ``HTTPRedirectRaceTests`` on a busy machine, none with no cache.
    final class CountingCache: URLCache, @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var lookups: Int { lock.withLock { count } }

        override func getCachedResponse(
            for dataTask: URLSessionDataTask, completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
        ) {
            lock.withLock { count += 1 }
            super.getCachedResponse(for: dataTask, completionHandler: completionHandler)
        }

        override func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
            lock.withLock { count += 1 }
            return super.cachedResponse(for: request)
        }
    }

    @Test func aCacheInTheCallersConfigurationIsNeverAsked() async throws {
        let cache = CountingCache(memoryCapacity: 8 << 20, diskCapacity: 0, diskPath: nil)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = cache
        let loader = HTTPDataLoader(sessionConfiguration: configuration)
        #expect(try await loader.loadData(for: server.url("/images/photo.jpg")) == first)
        let slow = Task { try await loader.loadData(for: server.url("/slow/2000/images/photo.jpg")) }
        try await Task.sleep(for: .milliseconds(50))
        slow.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await slow.value }
        #expect(cache.lookups == 0)
        // The caller's object is left as it was.
        #expect(configuration.urlCache === cache)
    }

    /// The session is made by the first download: making one on Linux creates a folder in the user's
    /// cache folder (``CLICacheTests/aToolRunThatDownloadsNothingLeavesNoURLCacheFolder()``), which a store of
    /// local and `data:` images should not leave behind.
    @Test func theSessionIsMadeByTheFirstDownload() async throws {
        var configuration = ImageStore.Configuration(name: "session")
        configuration.rootDirectory = directory.url.appendingPathComponent("stores")
        let store = try ImageStore(configuration: configuration)
        let loader = try #require(store.configuration.dataLoader as? DataLoader)
        let local = directory.url.appendingPathComponent("local.png")
        try SampleImages.png(width: 6, height: 4).write(to: local)
        let inline = URL(
            string: "data:image/png;base64," + (try SampleImages.png(width: 3, height: 2)).base64EncodedString())!
        #expect(try await store.image(for: ImageRequest(url: local)).pixelSize == PixelSize(width: 6, height: 4))
        #expect(try await store.image(for: ImageRequest(url: inline)).pixelSize == PixelSize(width: 3, height: 2))
        #expect(store.cachedPixelSize(for: server.url("/images/photo.jpg")) == nil)
        #expect(loader.http.madeTasks == nil)

        // A load cancelled before it starts makes none either.
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await loader.http.loadData(for: server.url("/images/photo.jpg"))
        }
        await #expect(throws: ImageLoadingError.cancelled) { try await cancelled.value }
        #expect(loader.http.madeTasks == nil)

        #expect(try await loader.loadData(for: server.url("/images/photo.jpg")) == first)
        #expect(loader.http.madeTasks != nil)
        #expect(try await server.hits(for: "/images/photo.jpg") == 1)
    }

    @Test func anHourOfFreshnessDoesNotKeepTheServerFromAnswering() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = URLCache(memoryCapacity: 8 << 20, diskCapacity: 0, diskPath: nil)
        let loader = HTTPDataLoader(sessionConfiguration: configuration)
        // Fresh for an hour: a URLCache keeps it and answers the second load itself.
        let path = "/cache/max-age=3600/images/photo.jpg"
        #expect(try await loader.loadData(for: server.url(path)) == first)
        try second.write(to: directory.url.appendingPathComponent("photo.jpg"))
        #expect(try await loader.loadData(for: server.url(path)) == second)
        #expect(try await server.hits(for: path) == 2)
    }
}
