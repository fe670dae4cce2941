import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import AsyncImageCache

/// Redirects against cancellation and the resource deadline, and loads whose redirect to another host
/// is followed as a new task: every load ends once, no task table entry or connection is left behind,
/// and swift-corelibs-foundation never traps.
@Suite(.timeLimit(.minutes(5))) struct HTTPRedirectRaceTests {
    let directory = TemporaryDirectory("http-redirect-race")
    let server: TestHTTPServer
    let imageBytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })

    init() async throws {
        try imageBytes.write(to: directory.url.appendingPathComponent("photo.jpg"))
        server = try await TestHTTPServer(serving: directory.url)
    }

    private func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    /// A `302` (or `code`) from `origin` to `target`.
    private func redirect(from origin: TestHTTPServer, to target: URL, code: Int = 302) -> URL {
        origin.redirect(to: target, code: code)
    }

    // MARK: Moved tasks: results

    @Test func aMovedTaskFailsAsADirectOneWould() async throws {
        let origin = try await TestHTTPServer(serving: directory.url)
        defer { origin.stop() }
        let loader = HTTPDataLoader(maximumResponseBytes: 300_000)
        let notFound = redirect(from: origin, to: server.url("/status/404"))
        await #expect(throws: ImageLoadingError.httpStatus(code: 404, url: notFound)) {
            try await loader.loadData(for: notFound)
        }
        let truncated = redirect(from: origin, to: server.url("/truncated/images/photo.jpg"))
        do {
            _ = try await loader.loadData(for: truncated)
            Issue.record("truncated body accepted")
        } catch {
            guard case .truncatedResponse = error else {
                Issue.record("truncated: \(error)")
                return
            }
        }
        let big = redirect(from: origin, to: server.url("/oversized/400000"))
        await #expect(throws: ImageLoadingError.responseTooLarge(url: big, byteLimit: 300_000)) {
            try await loader.loadData(for: big)
        }
        let stream = redirect(from: origin, to: server.url("/oversized-stream/400000"))
        await #expect(throws: ImageLoadingError.responseTooLarge(url: stream, byteLimit: 300_000)) {
            try await loader.loadData(for: stream)
        }
        // A revalidation through a permanent cross-host redirect: 304.
        let etag = redirect(from: origin, to: server.url("/cache/max-age=3600/images/photo.jpg"), code: 301)
        guard case .modified(let body, let policy) = try await loader.loadData(for: etag, revalidating: nil) else {
            Issue.record("not modified at first")
            return
        }
        #expect(body == imageBytes)
        #expect(policy.maxAge == 3600)
        guard case .notModified(let refreshed) = try await loader.loadData(for: etag, revalidating: policy) else {
            Issue.record("no 304 through the moved task")
            return
        }
        #expect(refreshed.maxAge == 3600)
        try await waitUntil { loader.unfinishedTaskCount == 0 }
        #expect(loader.waitingTaskCount == 0)
    }

    @Test func manyLoadsHoppingBetweenTwoHostsWithOneConnectionEachAllFinish() async throws {
        let origin = try await TestHTTPServer(serving: directory.url)
        defer { origin.stop() }
        let loader = HTTPDataLoader.limited(connectionsPerHost: 1, timeout: 10)
        // origin -> origin (same host) -> server -> server (same host) -> origin -> image
        let urls = (0..<6).map { i -> URL in
            let back = origin.url("/slow/100/alias/\(i)/images/photo.jpg")
            let viaServer = redirect(from: server, to: back)
            let sameOnOrigin = origin.url("/redirect-to/302?\(escaped(viaServer.absoluteString))")
            return redirect(from: origin, to: sameOnOrigin)
        }
        #expect(await failures(loading: urls, with: loader, expecting: imageBytes) == [])
        try await waitUntil { loader.unfinishedTaskCount == 0 }
        #expect(loader.waitingTaskCount == 0)
    }

    // MARK: Races

    /// Cancels loads at random moments around their redirect; every load must end, no process trap,
    /// and no connection may leak (one per host: a leak stalls the final load). Before, a cancellation
    /// that reached the task while it waited for its redirect's completion handler (queued on the
    /// delegate queue, or running) made the handler's call trap in swift-corelibs-foundation: "Received
    /// callback for HTTP redirection, but we're not waiting for it" (3 of 3 runs, same host and other).
    @Test(arguments: [true, false]) func cancellingAroundARedirectNeitherTrapsNorLeaks(crossHost: Bool) async throws {
        let origin = try await TestHTTPServer(serving: directory.url)
        defer { origin.stop() }
        let loader = HTTPDataLoader.limited(connectionsPerHost: 1, timeout: 10)
        let iterations = Int(ProcessInfo.processInfo.environment["REVIEW_ITERATIONS"] ?? "") ?? 300
        var outcomes: [String: Int] = [:]
        for i in 0..<iterations {
            let target = (crossHost ? server : origin).url("/alias/\(i)/images/photo.jpg")
            let url = redirect(from: origin, to: target)
            let task = Task { try await loader.loadData(for: url) }
            try await Task.sleep(nanoseconds: UInt64.random(in: 0...4_000_000))
            task.cancel()
            do {
                _ = try await task.value
                outcomes["ok", default: 0] += 1
            } catch {
                outcomes["\(error)".prefix(20).description, default: 0] += 1
            }
        }
        print("outcomes", outcomes)
        try await waitUntil { loader.unfinishedTaskCount == 0 }
        #expect(loader.waitingTaskCount == 0)
        let last = redirect(from: origin, to: (crossHost ? server : origin).url("/images/photo.jpg"))
        #expect(try await loader.loadData(for: last) == imageBytes)
        #expect(try await loader.loadData(for: server.url("/images/photo.jpg")) == imageBytes)
        #expect(try await loader.loadData(for: origin.url("/images/photo.jpg")) == imageBytes)
    }

    /// Resource deadlines that expire around the redirect: every load must end with `.timedOut`
    /// (the target is held for ever and there is no inactivity timeout). Before, the same trap (2 of 2).
    @Test func deadlinesAroundACrossHostRedirectAlwaysEndTheLoad() async throws {
        let origin = try await TestHTTPServer(serving: directory.url)
        defer { origin.stop() }
        let iterations = Int(ProcessInfo.processInfo.environment["REVIEW_ITERATIONS"] ?? "") ?? 200
        var outcomes: [String: Int] = [:]
        var hung = 0
        for i in 0..<iterations {
            let deadline = Double.random(in: 0.0005...0.004)
            let loader = HTTPDataLoader(timeout: .infinity, resourceTimeout: deadline)
            let url = redirect(from: origin, to: server.url("/held/never/alias/\(i)/images/photo.jpg"))
            let result: String = await withTaskGroup(of: String.self) { group in
                group.addTask {
                    do throws(ImageLoadingError) {
                        _ = try await loader.loadData(for: url)
                        return "ok"
                    } catch {
                        return "\(error)".prefix(12).description
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(10))
                    return "HUNG"
                }
                let first = await group.next()!
                group.cancelAll()
                return first
            }
            if result == "HUNG" { hung += 1 }
            outcomes[result, default: 0] += 1
        }
        print("outcomes", outcomes)
        #expect(hung == 0)
        try await server.release("never")
    }
}
