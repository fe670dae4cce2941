import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads the bytes behind `http:` and `https:` URLs with `URLSession`.
///
/// The loader keeps the failures apart so the store can report them: a status other than 2xx, a
/// timeout, a body cut short of its `Content-Length` (or a `206` with only part of the image), a body
/// over ``maximumResponseBytes`` (stopped as soon as it crosses the cap, or before the body when
/// `Content-Length` already says so), and other transport errors. Redirects are followed to `http`
/// and `https` URLs only: one to another scheme (`file:`, `data:`) fails with
/// ``ImageLoadingError/unsupportedURL(_:)``. The bytes a redirect leads to stay fresh no longer than
/// the redirect itself may be kept: its own `max-age` or `Expires`, none for `no-store` or `no-cache`,
/// and none for a 302, 303 or 307 that says nothing (a 301 or 308 that says nothing sets no limit), so
/// that `/avatar/42` answered by `302` to an image kept for a year is asked again. Cancelling the Swift task cancels the download and throws
/// ``ImageLoadingError/cancelled`` at once.
///
/// At most the session configuration's `httpMaximumConnectionsPerHost` downloads per host run at once;
/// the others wait, and their ``timeout`` and ``resourceTimeout`` start when they do. (On Linux the loader
/// holds them to that number itself and sets no limit in libcurl, whose version 8 could leave a download
/// started as a cancelled one's connection closed waiting inside it until its timeout.) A download
/// redirected to another host counts against that host from then on, and waits for it the same way
/// (an ``ImageStore``'s visible load first waits for one of the store's fetch slots of that host);
/// its ``resourceTimeout`` runs on from when it was first sent, stopped only while such a visible load
/// waits for that fetch slot. A URL without a port counts as its
/// scheme's default one (`http://a/` and `http://a:80/` are one host). They start by
/// priority, in order within one: an ``ImageStore``'s visible loads before its prefetches (a queued
/// prefetch that a visible load joins goes up with it), other callers' by their task's priority. The
/// ``timeout`` ends a download that goes quiet; the ``resourceTimeout`` ends one that never does, such
/// as a server that sends a few bytes every second for ever (an image's body, an error page, or the
/// body of a redirect), and closes its connection.
///
/// On Linux, swift-corelibs-foundation's `URLSession` keeps a core busy while a download waits on its
/// server (it leaves an always-ready write source on the socket once the request is sent), so there
/// the two timeouts also bound the CPU a slow server costs.
///
/// Also on Linux, swift-corelibs-foundation reads the body of a redirect (301, 302, 303, 307, 308)
/// itself before it asks the delegate, and never shows it: ``maximumResponseBytes`` cannot stop it, and
/// neither can a cancellation. It copies the body as it grows, so its time grows with the square of
/// the size, and it holds the queue that every `URLSession` in the process shares. A redirect with a
/// 64 MiB body from a loopback server held up every other download in the process for over three
/// minutes, cancelled 0.3 s in. The short bodies servers send with a redirect ("Moved: here") cost
/// nothing.
///
/// By default it uses an ephemeral session without a `URLCache`: the store keeps its own memory and
/// disk tiers, and a second copy of every response would only cost memory and disk. The session is made
/// by the first download, not before: on Linux, making a session configuration creates the folder
/// `org.swift.foundation.URLCache` in the user's cache folder, and a store that only shows local images
/// leaves none. Requests carry ``acceptHeader``, so an image CDN that negotiates the format sends one
/// this platform decodes, WebP rather than a larger JPEG among them; a session configuration with its
/// own `Accept` keeps it.
/// They also carry `Accept-Encoding: identity`, whatever the configuration says: images are compressed
/// already, and a body the server encodes anyway (`Content-Encoding: gzip`) is refused with
/// ``ImageLoadingError/network(url:description:)`` before any of it is read, as a small gzip body can
/// decompress to gigabytes faster than the ``maximumResponseBytes`` cap can stop it. An error page sent
/// encoded fails with its ``ImageLoadingError/httpStatus(code:url:)`` the same way.
///
/// ```swift
/// let loader = HTTPDataLoader(timeout: 10, maximumResponseBytes: 8 << 20)
/// let bytes = try await loader.loadData(for: URL(string: "https://example.com/photo.jpg")!)
/// ```
public final class HTTPDataLoader: DataLoading {
    /// The default ``timeout``: 30 seconds.
    public static let defaultTimeout: TimeInterval = 30
    /// The default ``resourceTimeout``: 5 minutes.
    public static let defaultResourceTimeout: TimeInterval = 300
    /// The default ``maximumResponseBytes``: 64 MiB.
    public static let defaultMaximumResponseBytes = 64 << 20

    #if canImport(ImageIO)
    /// The `Accept` header of every request: the formats ImageIO reads, then anything else at a lower
    /// quality (a server with nothing better still answers).
    public static let acceptHeader = "image/avif,image/heic,image/webp,image/jpeg,image/png,image/gif,*/*;q=0.8"
    #else
    /// The `Accept` header of every request: WebP, JPEG, PNG and GIF, then anything else at a lower
    /// quality (a server with nothing better still answers). AVIF and HEIF decode too, but at full size
    /// unless the file carries a thumbnail that covers the size, where a JPEG decodes at a fraction of
    /// it: a CDN is not asked for them.
    public static let acceptHeader = "image/webp,image/jpeg,image/png,image/gif,*/*;q=0.8"
    #endif

    /// How long, in seconds, a request may wait for its response or for more of its body. On Linux it
    /// counts in whole seconds: a fraction is rounded up (0.5 waits one second). `.infinity` sets no limit.
    public let timeout: TimeInterval
    /// How long, in seconds, a download may take in all, from the moment it starts: however steadily
    /// its bytes arrive, it then ends with ``ImageLoadingError/timedOut(_:)``. `.infinity` sets no limit.
    public let resourceTimeout: TimeInterval
    /// The largest body, in bytes, the loader accepts.
    public let maximumResponseBytes: Int

    /// The session and the table of its downloads, made by the first download. On Linux, making any
    /// `URLSessionConfiguration` creates `org.swift.foundation.URLCache` in the user's cache folder, even
    /// with no cache in it: a loader that never downloads (a store of local files) leaves nothing there.
    private let connection: LockedBox<Connection>
    /// Whether requests get ``acceptHeader``: unless the session configuration has an `Accept` of its own.
    private let setsAccept: Bool

    private enum Connection {
        /// Nothing downloaded yet: the caller's configuration, copied, or `nil` for the default one.
        case notMade(URLSessionConfiguration?)
        case made(URLSession, HTTPTaskTable)
    }

    /// Creates a loader with its own `URLSession`.
    ///
    /// - Parameters:
    ///   - timeout: How long, in seconds, a request may wait for its response or for more of its body;
    ///     30 by default. It overrides the session configuration's `timeoutIntervalForRequest`. On Linux a
    ///     fraction of a second is rounded up. `.infinity` (or NaN) sets no limit; a value below 0 counts as 0.
    ///   - resourceTimeout: How long, in seconds, a download may take in all, however steadily its bytes
    ///     arrive; 5 minutes by default. `.infinity` (or NaN) sets no limit; a value below 0 counts as 0.
    ///   - maximumResponseBytes: The largest body to accept, in bytes; 64 MiB by default.
    ///   - sessionConfiguration: The configuration of the session, copied; `nil`, the default, means
    ///     an ephemeral one. The copy never has a `URLCache`, whatever the configuration given holds:
    ///     the store keeps the bytes and decides when to ask again, and a second cache would answer
    ///     for the server. (On Linux its lookup also runs on another thread, which lets a cancelled
    ///     load's task trap swift-corelibs-foundation when it ends at that moment.)
    public init(
        timeout: TimeInterval = HTTPDataLoader.defaultTimeout,
        resourceTimeout: TimeInterval = HTTPDataLoader.defaultResourceTimeout,
        maximumResponseBytes: Int = HTTPDataLoader.defaultMaximumResponseBytes,
        sessionConfiguration: URLSessionConfiguration? = nil
    ) {
        self.timeout = timeout.isNaN ? .infinity : max(0, timeout)
        self.resourceTimeout = resourceTimeout.isNaN ? .infinity : max(0, resourceTimeout)
        self.maximumResponseBytes = maximumResponseBytes
        // A copy, so that setting the timeout does not change the caller's object. The default, an
        // ephemeral configuration, has no headers of its own.
        let configuration = sessionConfiguration.map { $0.copy() as! URLSessionConfiguration }
        setsAccept = !(configuration?.httpAdditionalHeaders ?? [:]).keys.contains {
            ($0 as? String)?.lowercased() == "accept"
        }
        connection = LockedBox(.notMade(configuration))
    }

    deinit {
        // The session retains its delegate until it is invalidated. A load in progress holds the
        // loader, so any task still running here belongs to a load that has already failed; on Linux,
        // finishTasksAndInvalidate() was seen to let such a task run on to the end of its body. The
        // invalidation runs on the table's queue, not on the thread that lets the loader go.
        if case .made(let session, let tasks) = connection.withLock({ $0 }) { tasks.invalidate(session) }
    }

    /// The session and its table, made on the first call. Loads that start meanwhile wait for it; it is
    /// made once per loader, and making it calls nothing of the caller's.
    private func madeConnection() -> (URLSession, HTTPTaskTable) {
        connection.withLock { state in
            switch state {
            case .made(let session, let tasks):
                return (session, tasks)
            case .notMade(let given):
                let configuration: URLSessionConfiguration
                if let given {
                    configuration = given
                } else {
                    configuration = .ephemeral
                    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
                }
                // An ephemeral configuration comes with an in-memory cache of its own.
                configuration.urlCache = nil
                configuration.timeoutIntervalForRequest = Self.sessionTimeout(timeout)
                let tasks = HTTPTaskTable(
                    connectionLimit: configuration.httpMaximumConnectionsPerHost, resourceTimeout: resourceTimeout)
                #if canImport(FoundationNetworking)
                // The table holds downloads to the configured number per host; libcurl gets no limit of its
                // own. libcurl 8 (Debian 13 has 8.14) counts a connection it is still closing, a cancelled
                // download's, against its per-host limit, and left a download the table started into the
                // freed place pending, never sent, until it timed out (every other one, in a loop of
                // cancellations); libcurl 7 did not. Without a limit there, the download opens a connection.
                configuration.httpMaximumConnectionsPerHost = Int(Int32.max)
                #endif
                // The delegate queue is only the place where callbacks run; the table has its own lock.
                let session = URLSession(configuration: configuration, delegate: tasks, delegateQueue: nil)
                state = .made(session, tasks)
                return (session, tasks)
            }
        }
    }

    /// The table of downloads, made with the session by the first download (`nil` before; internal for tests).
    var madeTasks: HTTPTaskTable? {
        connection.withLock { state in
            if case .made(_, let tasks) = state { tasks } else { nil }
        }
    }

    /// The timeout handed to `URLSession`. swift-corelibs-foundation drops a timeout's fraction (its
    /// timer counts `Int(timeout)` seconds), so under a second it was 0 and loads "timed out" at once,
    /// before their answer: rounded up there instead. Its `Int(timeout) * 1000` also stops the process
    /// for an infinite timeout or one of about 9e15 seconds or more: no limit is the longest it takes,
    /// 68 years (``longestSessionTimeout``).
    private static func sessionTimeout(_ timeout: TimeInterval) -> TimeInterval {
        #if canImport(FoundationNetworking)
        min(timeout, longestSessionTimeout).rounded(.up)
        #else
        timeout
        #endif
    }

    /// The longest timeout handed to `URLSession` on Linux, in seconds: `Int32.max`, and less where `Int`
    /// has 32 bits, so that its milliseconds still fit.
    static let longestSessionTimeout = TimeInterval(min(Int(Int32.max), Int.max / 1000))

    /// The priority of the store's run a load downloads for, read whenever a connection frees: it rises
    /// when a visible load joins a prefetch. Without one, a download waits at its task's priority.
    @TaskLocal static var runPriority: RunPriority?

    /// The slot of the store's ``ImageStore/fetchSlots`` that the run a load downloads for holds: a
    /// redirect to another host moves it there, and the request is sent once the run holds that host's
    /// slot (``FetchSlotHold``). Without one, as for other callers, a redirect waits only for a connection.
    @TaskLocal static var fetchSlot: FetchSlotHold?

    /// The downloads registered and not yet finished; 0 once every load has ended (for tests).
    var unfinishedTaskCount: Int { madeTasks?.count ?? 0 }

    /// The downloads waiting for a connection to their host (for tests).
    var waitingTaskCount: Int { madeTasks?.waitingCount ?? 0 }

    /// Downloads the complete body behind `url`.
    ///
    /// - Throws: ``ImageLoadingError/unsupportedURL(_:)`` for a scheme other than `http`/`https`, or
    ///   with the target of a redirect to one (`file:`, `data:`, ...: never followed);
    ///   ``ImageLoadingError/httpStatus(code:url:)``, ``ImageLoadingError/timedOut(_:)``,
    ///   ``ImageLoadingError/truncatedResponse(url:expectedBytes:receivedBytes:)``,
    ///   ``ImageLoadingError/responseTooLarge(url:byteLimit:)``, ``ImageLoadingError/network(url:description:)``
    ///   or ``ImageLoadingError/cancelled`` when the download fails.
    public func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .unsupportedURL(url)
        }
        let response = try await response(for: URLRequest(url: url))
        guard response.statusCode != 304 else { throw .httpStatus(code: 304, url: url) }
        return response.body
    }

    /// Downloads `url`, or with validators asks whether the stored bytes are still current: a
    /// `304 Not Modified` answers ``ConditionalLoadResult/notModified(_:)`` without a body.
    public func loadData(
        for url: URL, revalidating validators: HTTPCachePolicy?
    ) async throws(ImageLoadingError) -> ConditionalLoadResult {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .unsupportedURL(url)
        }
        var request = URLRequest(url: url)
        if let tag = validators?.entityTag { request.setValue(tag, forHTTPHeaderField: "If-None-Match") }
        if let date = validators?.lastModified { request.setValue(date, forHTTPHeaderField: "If-Modified-Since") }
        let response = try await self.response(for: request)
        let policy = response.cachePolicy
        if response.statusCode == 304 {
            // A 304 to a request that asked nothing is not an answer we can use.
            guard validators?.hasValidators == true else { throw .httpStatus(code: 304, url: url) }
            return .notModified(policy)
        }
        return .modified(response.body, policy)
    }

    /// Performs `request` and returns the 2xx (or 304) response with its body, status and headers.
    ///
    /// The status and headers are what HTTP caching needs (validators, freshness); ``loadData(for:)``
    /// keeps only the body. Its errors name the request's URL as given; URLSession is sent it with its
    /// scheme in lower case, as it refuses `HTTP://`.
    func response(for request: URLRequest) async throws(ImageLoadingError) -> HTTPLoadedResponse {
        guard let url = request.url else { preconditionFailure("an HTTP request without a URL") }
        guard !Task.isCancelled else { throw .cancelled }
        var request = request
        request.url = url.withLowercaseScheme
        request.timeoutInterval = Self.sessionTimeout(timeout)
        if setsAccept && request.value(forHTTPHeaderField: "Accept") == nil {
            request.setValue(Self.acceptHeader, forHTTPHeaderField: "Accept")
        }
        // Images are compressed already, and an encoded body is refused (see HTTPTaskTable).
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        // The task is made on the table's queue: on Linux making one waits for a work queue that a large
        // body can hold for seconds, and this thread is the Swift pool's.
        let (session, tasks) = madeConnection()
        let load = tasks.insert(url: url, byteLimit: maximumResponseBytes, fetchSlot: Self.fetchSlot)
        let priority: @Sendable () -> UInt8
        if let run = Self.runPriority {
            priority = { run.current == .normal ? TaskPriority.high.rawValue : TaskPriority.utility.rawValue }
        } else {
            let taskPriority = Task.currentPriority.rawValue
            priority = { taskPriority }
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                tasks.start(load, request: request, in: session, priority: priority, continuation: continuation)
            }
        } onCancel: {
            tasks.cancel(load)
        }
        return try result.get()
    }
}

/// A finished HTTP download: the body and the response it came with.
struct HTTPLoadedResponse: Sendable {
    /// The complete body.
    var body: Data
    /// The status code: 2xx, or 304 for a conditional request.
    var statusCode: Int
    /// The response headers; names as the server sent them.
    var headers: [String: String]
    /// The shortest freshness lifetime the redirects on the way allow; `nil` for no limit.
    var redirectLifetime: TimeInterval? = nil
    /// Whether the load followed a redirect that may lead elsewhere next time (a 302, 303 or 307, or a
    /// redirect that may not be kept).
    var followedRedirectThatMayChange = false

    /// What the headers (and, for a response without a freshness lifetime, the status) say about
    /// caching, its freshness cut to what the redirects allow.
    ///
    /// Through a redirect that may change, without `Last-Modified`: a revalidation does not send that
    /// date on through a redirect, and were the URL to serve an image itself by then, an older file's
    /// `304` to it would keep the image the URL no longer shows. The entity tag stays: only the same
    /// bytes match it.
    var cachePolicy: HTTPCachePolicy {
        var policy = HTTPCachePolicy(header: header).forStatus(statusCode).limited(toLifetime: redirectLifetime)
        if followedRedirectThatMayChange { policy.lastModified = nil }
        return policy
    }

    /// The value of the header named `name`, compared case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
