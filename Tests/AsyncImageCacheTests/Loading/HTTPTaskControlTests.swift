#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Testing

@testable import AsyncImageCache

/// On Linux, `URLSession.dataTask(with:)`, `URLSessionTask.resume()` and `cancel()`, and
/// `invalidateAndCancel()` wait for swift-corelibs-foundation's work queue, which every `URLSession` in
/// the process shares and libcurl holds for as long as it has bytes to hand over (seconds for a gzip
/// bomb, minutes for a large redirect body). The loader never calls them on the thread that asks: a
/// load starts and a cancelled one ends at once, a loader goes away at once, and the tasks follow when
/// the queue frees.
@Suite struct HTTPTaskControlTests {
    /// The work queue is held by a protocol of another session's, whose loading waits until released.
    @Test func aLoadIsCancelledWithoutWaitingForURLSessionsWorkQueue() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let (server, image) = try await TestHTTPServer.servingOneJPEG(in: folder)
            defer { withExtendedLifetime(folder) { server.stop() } }
            // The first load holds the host's only connection, its answer held by the server; the second waits.
            let loader = HTTPDataLoader.limited(connectionsPerHost: 1)
            let first = Task { try await loader.loadData(for: server.url("/held/first/images/0.jpg")) }
            try await waitUntil { try await server.hits(for: "/held/first/images/0.jpg") == 1 }
            let second = Task { try await loader.loadData(for: server.url("/images/0.jpg")) }
            try await waitUntil { loader.waitingTaskCount == 1 }

            let hold = await WorkQueueHold.held()
            first.cancel()
            await #expect(throws: ImageLoadingError.cancelled) { try await first.value }
            #expect(!hold.wasBroken, "the cancellation waited for the work queue")
            hold.release()
            // Once the queue frees, the second load takes the connection.
            #expect(try await second.value == image)
            #expect(loader.unfinishedTaskCount == 0)
        }
    }

    /// Making a task waits for the queue too: the loads are made on the table's queue, so none of the
    /// four holds a thread of the Swift pool (two on a two-core machine) while the queue is held.
    @Test func loadsStartedWhileTheWorkQueueIsHeldHoldNoThreadOfTheirCallers() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let (server, image) = try await TestHTTPServer.servingOneJPEG(in: folder)
            defer { withExtendedLifetime(folder) { server.stop() } }
            let loader = HTTPDataLoader()

            let hold = await WorkQueueHold.held()
            let loads = (0..<4).map { _ in Task { try await loader.loadData(for: server.url("/images/0.jpg")) } }
            try await waitUntil { loader.unfinishedTaskCount == 4 }
            loads[0].cancel()
            loads[1].cancel()
            for load in loads[..<2] { await #expect(throws: ImageLoadingError.cancelled) { try await load.value } }
            #expect(!hold.wasBroken, "the loads waited for the work queue on their callers' threads")
            hold.release()
            // Once the queue frees, the loads still wanted are made and sent; the cancelled ones never are.
            for load in loads[2...] { #expect(try await load.value == image) }
            #expect(try await server.hits(for: "/images/0.jpg") == 2)
            try await waitUntil { loader.unfinishedTaskCount == 0 }
        }
    }

    /// A loader that goes away invalidates its session, which waits for the queue: not on the thread
    /// that lets the loader go.
    @Test func aLoaderGoesAwayWithoutWaitingForURLSessionsWorkQueue() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let (server, _) = try await TestHTTPServer.servingOneJPEG(in: folder)
            defer { withExtendedLifetime(folder) { server.stop() } }
            var loader: HTTPDataLoader? = HTTPDataLoader()
            #expect(try await loader?.loadData(for: server.url("/images/0.jpg")) != nil)

            let hold = await WorkQueueHold.held()
            loader = nil
            #expect(!hold.wasBroken, "the loader's deinit waited for the work queue")
            hold.release()
            // A loader made after it, once the queue frees, loads as any other.
            #expect(try await HTTPDataLoader().loadData(for: server.url("/images/0.jpg")).isEmpty == false)
        }
    }

    /// A load's resource timeout counts from when its task is sent, not from when it is given a
    /// connection: the control queue can be busy for seconds in between, and the load has not reached
    /// the server then. Before, its deadline ran out while it waited there, and it failed with
    /// `.timedOut` although its answer came at once once sent.
    @Test func theResourceTimeoutStartsWhenTheTaskIsSentNotWhileTheControlQueueIsBusy() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let (server, image) = try await TestHTTPServer.servingOneJPEG(in: folder)
            defer { withExtendedLifetime(folder) { server.stop() } }
            let loader = HTTPDataLoader(timeout: 60, resourceTimeout: 3)
            let busyQueue = DispatchSemaphore(value: 0)
            HTTPTaskTable.taskControl.async { busyQueue.wait() }
            let load = Task { try await loader.loadData(for: server.url("/images/0.jpg")) }
            // Twice the resource timeout, with the load given its connection but not yet sent.
            try await waitUntil { loader.unfinishedTaskCount == 1 }
            try await Task.sleep(for: .seconds(6))
            busyQueue.signal()
            #expect(try await load.value == image)
            #expect(try await server.hits(for: "/images/0.jpg") == 1)
        }
    }

    /// A load redirected to another host takes its place in that host's line when it moves, not when
    /// its new task is made: with the control queue busy meanwhile, the connection that frees there
    /// goes to it, the more urgent, not to a prefetch that waited longer.
    @Test func aLoadMovedToAnotherHostWaitsThereAtItsPriorityWhileItsTaskIsMade() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("images")
            let (server, image) = try await TestHTTPServer.servingOneJPEG(in: folder)
            defer { withExtendedLifetime(folder) { server.stop() } }
            let origin = try await TestHTTPServer(serving: folder.url)
            defer { origin.stop() }
            let loader = HTTPDataLoader.limited(connectionsPerHost: 1)
            // The server's only connection is busy, and a prefetch waits for it.
            let busy = Task { try await loader.loadData(for: server.url("/held/busy/images/0.jpg")) }
            try await waitUntil { try await server.hits(for: "/held/busy/images/0.jpg") == 1 }
            let prefetch = Task(priority: .utility) { try await loader.loadData(for: server.url("/images/0.jpg")) }
            try await waitUntil { loader.waitingTaskCount == 1 }
            // An urgent load asks the origin, whose redirect to the server is held back.
            let target = server.url("/held/urgent/images/0.jpg")
            let urgent = Task(priority: .high) {
                try await loader.loadData(for: origin.url("/held/moved/redirect-to/302?\(target.absoluteString)"))
            }
            try await waitUntil { try await origin.hits(for: "/held/moved/redirect-to/302") == 1 }

            // The control queue is busy from here, as when URLSession's work queue holds it.
            let busyQueue = DispatchSemaphore(value: 0)
            HTTPTaskTable.taskControl.async { busyQueue.wait() }
            try await origin.release("moved")
            try await waitUntil { loader.waitingTaskCount == 2 }
            try await server.release("busy")
            #expect(try await busy.value == image)
            busyQueue.signal()
            try await waitUntil { try await server.hits(for: "/held/urgent/images/0.jpg") == 1 }
            #expect(try await server.hits(for: "/images/0.jpg") == 0, "the prefetch took the connection first")
            try await server.release("urgent")
            #expect(try await urgent.value == image)
            #expect(try await prefetch.value == image)
        }
    }
}

/// swift-corelibs-foundation's work queue held until released, by a task of a session of its own
/// whose protocol loads there (as libcurl decodes a large body there): for as long as a test needs.
/// One per process, as its protocol's signals are.
final class WorkQueueHold: Sendable {
    private let session: URLSession
    private let broken = LockedBox(false)

    /// Holds the queue until ``release()``, or for `breaker` seconds at most: only a breaker, for code
    /// that waits for the queue, which would not go on before it (see ``wasBroken``).
    static func held(breakingAfter breaker: TimeInterval = 10) async -> WorkQueueHold {
        let hold = WorkQueueHold()
        await hold.waitUntilHeld()
        DispatchQueue.global().asyncAfter(deadline: .now() + breaker) { [broken = hold.broken] in
            broken.withLock { $0 = true }
            hold.release()
        }
        return hold
    }

    /// Whether the breaker of ``held(breakingAfter:)`` let the queue go.
    var wasBroken: Bool { broken.withLock { $0 } }

    init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [HoldingProtocol.self]
        session = URLSession(configuration: configuration)
        session.dataTask(with: URL(string: "held://queue")!).resume()
    }

    /// Returns once the queue is held.
    func waitUntilHeld() async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                HoldingProtocol.held.wait()
                continuation.resume()
            }
        }
    }

    /// Lets the queue go; again does nothing.
    func release() {
        let first = HoldingProtocol.isReleased.withLock { released in
            defer { released = true }
            return !released
        }
        if first { HoldingProtocol.freed.signal() }
    }

    private final class HoldingProtocol: URLProtocol {
        static let held = DispatchSemaphore(value: 0)
        static let freed = DispatchSemaphore(value: 0)
        static let isReleased = LockedBox(false)

        override class func canInit(with request: URLRequest) -> Bool { request.url?.scheme == "held" }
        override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

        override func startLoading() {
            Self.held.signal()
            Self.freed.wait()
            client?.urlProtocol(self, didFailWithError: URLError(.cancelled))
        }

        override func stopLoading() {}
    }
}
#endif
