import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session delegate of an ``HTTPDataLoader``: one entry per load, keyed by an id of the table's,
/// holding the continuation to resume, the task that carries the load and the bytes received so far.
///
/// Each entry is removed exactly once, by whichever comes first: completion, a failure detected in a
/// callback (status, size cap, a redirect refused), cancellation of the Swift task, the deadline, or
/// the session's invalidation before its task is made. Whoever removes it resumes its continuation,
/// outside the lock, so every load resumes exactly once; callbacks that arrive for a removed entry
/// find nothing and do nothing.
///
/// At most `connectionLimit` tasks per host run at once; the others wait here, unresumed, and start as
/// running ones end: the most urgent first, by the priority each one's closure gives when a connection
/// frees (a store's run's, which rises when a visible load joins a prefetch; else the Swift task's), in
/// order within a priority. A load takes its place when it starts, before its task is made, and a load
/// given a connection before then is resumed as soon as it is. Left to libcurl, the waiting ones would
/// be resumed and queued inside it, where the session's timeout already runs: loads that never reached
/// the server timed out. A redirect to another host hands its connection back and is followed as a new
/// task of the load, which waits for a connection to that host the same way. A load that holds a store's
/// fetch slot (``FetchSlotHold``) first moves the slot to the new host, and gets in line for a connection
/// only once it holds one of that host's: in line, or holding a connection, while it waited, it could
/// keep the connection from the loads that hold the slots it waits for. (swift-corelibs-foundation
/// cannot wait inside the redirect: its timeout runs while it waits for the delegate, and an answer
/// after that traps.)
///
/// A load that runs longer than `resourceTimeout` is ended by a timer armed when it is first sent: the
/// load fails with `.timedOut` (unless it already failed, as a drained error page has) and the task is
/// cancelled, which closes the connection. The timer stops while a redirect's move waits for a fetch
/// slot, and goes on with the time it had left once the load is sent to the new host.
///
/// Tasks are made, resumed and cancelled, and the session invalidated, on one serial queue that every
/// table shares, in the order asked, never on the thread that asks: on Linux each of them waits for a
/// work queue that a large body can hold for seconds (see `control`).
final class HTTPTaskTable: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Unchecked: `entries`, `loadOfTask`, `nextLoad`, `running`, `waiting` and `isInvalidated` are only
    // read or written while holding `lock`; `lock`, `connectionLimit` and `resourceTimeout` are `let`s.
    private let lock = NSLock()
    /// The loads not yet ended, by their id.
    private var entries: [Int: Entry] = [:]
    /// The load each task made carries, by the task's identifier; a task whose load has ended or moved
    /// on to another task is not here.
    private var loadOfTask: [Int: Int] = [:]
    /// The id of the next load.
    private var nextLoad = 0
    /// The most tasks per host resumed at once: the session's `httpMaximumConnectionsPerHost`.
    private let connectionLimit: Int
    /// The tasks resumed and not yet removed, per host.
    private var running: [String: Int] = [:]
    /// The loads whose task is made but not resumed, per host, oldest first, with the priority they
    /// wait at.
    private var waiting: [String: [(load: Int, priority: @Sendable () -> UInt8)]] = [:]
    /// Set by ``invalidate(_:)``: no task is made after it.
    private var isInvalidated = false
    /// The most redirects one load follows, counting those it follows as new tasks, which
    /// swift-corelibs-foundation's own limit does not see.
    static let redirectLimit = 16
    /// How long a resumed task may run in all; `.infinity` for no limit.
    private let resourceTimeout: TimeInterval

    init(connectionLimit: Int, resourceTimeout: TimeInterval = .infinity) {
        self.connectionLimit = max(1, connectionLimit)
        self.resourceTimeout = resourceTimeout
    }

    typealias Continuation = CheckedContinuation<Result<HTTPLoadedResponse, ImageLoadingError>, Never>

    private struct Entry {
        let url: URL
        /// The task that carries the load: the first, or the one that follows its redirect to another
        /// host; `nil` until the first is made, and from a move to another host until the next is.
        var task: URLSessionTask?
        /// The host whose connection the task holds or waits for: its URL's, then its redirect's.
        var host: String
        /// The priority it waits at for a connection; set when it starts.
        var priority: (@Sendable () -> UInt8)?
        let byteLimit: Int
        var continuation: Continuation?
        /// Set when the Swift task was cancelled while the entry held no continuation: before
        /// ``HTTPTaskTable/start(_:request:in:priority:continuation:)`` ran (or once a drain resumed it,
        /// where nothing reads it).
        var cancelledBeforeStart = false
        /// Set once the load is given one of its host's connections: its task is resumed then, or as soon
        /// as it is made.
        var isRunning = false
        /// Ends the load at `resourceTimeout` after it was first sent; cancelled when the entry goes.
        var deadline: (any DispatchSourceTimer)?
        /// When `deadline` fires.
        var deadlineTime: DispatchTime?
        /// The time `deadline` had left when a move to another host stopped it to wait for a fetch slot:
        /// the next task's sending arms it again for that long, so that a load does not run out of time
        /// waiting for other loads' slots before it asks the host (as it waits for a first slot unarmed).
        var timeLeft: TimeInterval?
        var response: HTTPURLResponse?
        /// The announced length of an unencoded body, used to detect truncation.
        var expectedBytes: Int?
        var body = Data()
        /// Set once the load has failed on its status: the (small) error body is read and dropped
        /// instead of cancelling mid-callback, which races inside swift-corelibs-foundation and can
        /// trap ("Trying to access a behaviour for a task that in not in the registry").
        var isDraining = false
        var drainedBytes = 0
        /// The shortest freshness the redirects on the way allow; `nil` for no limit (or no redirect).
        var redirectLifetime: TimeInterval?
        /// Set once the load follows a redirect that may lead elsewhere next time, where the response's
        /// `Last-Modified` dates a file the URL may not serve then.
        var followedRedirectThatMayChange = false
        /// The redirects the load has followed, as new tasks or not.
        var redirects = 0
        /// The store's slot that the load's redirects to another host move (``HTTPDataLoader/fetchSlot``).
        let fetchSlot: FetchSlotHold?
        /// Set from a move to another host until the fetch slot lets the load wait for a connection there.
        var isWaitingForFetchSlot = false
        /// Ends that wait, for a load that ends during it.
        var stopWaitingForFetchSlot: (@Sendable () -> Void)?
    }

    /// The most bytes a body's buffer is reserved for up front, whatever length its response announces:
    /// the default response-size cap, ``HTTPDataLoader/defaultMaximumResponseBytes``.
    static let largestReservation = HTTPDataLoader.defaultMaximumResponseBytes

    /// The most bytes of an error page (a body sent with an error status) read and dropped before the
    /// download is stopped: the load has failed already, and past this, keeping the connection for the
    /// next request is not worth reading on (under the default cap, a 404 page of 60 MB was read whole).
    static let drainLimit = 64 << 10

    /// The number of entries: loads registered and not yet finished (for tests).
    var count: Int { lock.withLock { entries.count } }

    /// The tasks waiting for a connection, every host's (for tests).
    var waitingCount: Int { lock.withLock { waiting.values.reduce(0) { $0 + $1.count } } }

    /// Registers a load of `url` before it starts, so a cancellation that comes first has an entry to
    /// mark; returns the load's id. `fetchSlot` moves with each redirect to another host, and the load
    /// waits for it there before it waits for a connection.
    func insert(url: URL, byteLimit: Int, fetchSlot: FetchSlotHold? = nil) -> Int {
        lock.withLock {
            defer { nextLoad += 1 }
            entries[nextLoad] = Entry(url: url, host: Self.host(of: url), byteLimit: byteLimit, fetchSlot: fetchSlot)
            return nextLoad
        }
    }

    /// Stores the continuation and has the task of `load` made for `request` in `session`, to be resumed
    /// once its host has a free connection, before waiting tasks of a lower `priority` (asked again
    /// whenever a connection frees); or resumes the continuation with `.cancelled` when the Swift task
    /// was cancelled in the meantime.
    func start(
        _ load: Int, request: URLRequest, in session: URLSession, priority: @escaping @Sendable () -> UInt8,
        continuation: Continuation
    ) {
        var ended: Entry?  // released after the lock (see `removeEntry`)
        let cancelled: Bool = lock.withLock {
            guard let entry = entries[load], !entry.cancelledBeforeStart else {
                ended = entries.removeValue(forKey: load)
                return true
            }
            entries[load]?.continuation = continuation
            entries[load]?.priority = priority
            // In line for a connection now, as the load asks; its task is resumed once both are there.
            _ = admit(load, to: entry.host, priority: priority)
            return false
        }
        withExtendedLifetime(ended) {}
        if cancelled {
            continuation.resume(returning: .failure(.cancelled))
        } else {
            Self.control { self.makeTask(of: load, for: request, in: session) }
        }
    }

    /// Makes the task that carries `load` on with `request`, and resumes it if the load has been given
    /// a connection (else it is resumed when it is); unless the load has ended meanwhile. Runs on
    /// ``taskControl``.
    private func makeTask(of load: Int, for request: URLRequest, in session: URLSession) {
        // A task made in an invalidated session traps swift-corelibs-foundation ("Session invalidated").
        // The invalidation runs on this queue too, so none comes between this check and the task.
        let (makes, failed, next): (Bool, Entry?, URLSessionTask?) = lock.withLock {
            guard entries[load] != nil else { return (false, nil, nil) }
            guard !isInvalidated else {
                let (removed, next) = removeEntry(load)
                return (false, removed, next)
            }
            return (true, nil, nil)
        }
        if let next { send(next) }
        failed?.continuation?.resume(returning: .failure(.cancelled))
        guard makes else { return }
        let task = session.dataTask(with: request)
        let resume: Bool? = lock.withLock {
            guard let entry = entries[load] else { return nil }
            entries[load]?.task = task
            loadOfTask[task.taskIdentifier] = load
            return entry.isRunning
        }
        switch resume {
        case nil:
            // Ended while the task was made: it is never sent.
            task.cancel()
        case true?:
            send(task)
        case false?:
            break
        }
    }

    /// Invalidates `session`, cancelling its tasks, on ``taskControl``: after the tasks asked for before
    /// it are made, and never on the calling thread (the loader's `deinit`), as it waits for
    /// swift-corelibs-foundation's work queue.
    ///
    /// Nor does it take `lock` on that thread, which may hold it: the loader goes with the last reference to
    /// its store, which a removed entry's fetch slot can hold. Entries are released after the lock now (see
    /// `removeEntry`); when one was released under it, `NSLock` not being recursive, the delegate thread
    /// waited for itself for ever, and the session, its connection and the table were never freed.
    func invalidate(_ session: URLSession) {
        Self.control { [self] in
            lock.withLock { isInvalidated = true }
            session.invalidateAndCancel()
        }
    }

    /// The key the connection limit counts by: scheme, host and port (the scheme's default when the URL
    /// names none, so `http://a/` and `http://a:80/` are one host), as libcurl reuses connections.
    static func host(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }

    /// Gives `load` a connection to `host` and marks it running when one is free (`true`: resume its
    /// task, if made, once the lock is released), else queues it at `priority`. Call with `lock` held.
    private func admit(_ load: Int, to host: String, priority: @escaping @Sendable () -> UInt8) -> Bool {
        guard running[host, default: 0] < connectionLimit else {
            waiting[host, default: []].append((load, priority))
            return false
        }
        running[host, default: 0] += 1
        markRunning(load)
        return true
    }

    /// The id of the load `task` carries and the index of its entry; `nil` once the load has ended or
    /// moved on to another task. Call with `lock` held.
    private func entryIndex(of task: URLSessionTask) -> Dictionary<Int, Entry>.Index? {
        loadOfTask[task.taskIdentifier].flatMap { entries.index(forKey: $0) }
    }

    /// Removes the entry of `load` and frees its connection; returns the entry and the waiting task that
    /// takes the connection, to resume once the lock is released. Call with `lock` held, and keep the entry
    /// until it is released: through its fetch slot an entry can hold the last reference to a store, whose
    /// teardown (its loader's `deinit`, a caller's decoder or observer) is code that must not run under it.
    private func removeEntry(_ load: Int) -> (entry: Entry?, next: URLSessionTask?) {
        guard let entry = entries.removeValue(forKey: load) else { return (nil, nil) }
        entry.deadline?.cancel()
        if let task = entry.task { loadOfTask[task.taskIdentifier] = nil }
        guard entry.isRunning else {
            waiting[entry.host]?.removeAll { $0.load == load }
            if waiting[entry.host]?.isEmpty == true { waiting[entry.host] = nil }
            return (entry, nil)
        }
        return (entry, freeConnection(to: entry.host))
    }

    /// Frees a connection to `host` and gives it to the first of the most urgent loads waiting for one,
    /// as urgent as they are now; returns that load's task, to resume once the lock is released (`nil`
    /// if it is not made yet: it is resumed when it is). Call with `lock` held.
    private func freeConnection(to host: String) -> URLSessionTask? {
        running[host, default: 1] -= 1
        if running[host] == 0 { running[host] = nil }
        guard let queue = waiting[host] else { return nil }
        let priorities = queue.map { $0.priority() }
        guard let highest = priorities.max(), let index = priorities.firstIndex(of: highest) else { return nil }
        let next = queue[index].load
        waiting[host]?.remove(at: index)
        if waiting[host]?.isEmpty == true { waiting[host] = nil }
        markRunning(next)
        running[host, default: 0] += 1
        return entries[next]?.task
    }

    /// Marks the entry of `load` running: its task may be sent. Call with `lock` held.
    private func markRunning(_ load: Int) {
        entries[load]?.isRunning = true
    }

    /// Sends `task` and, the first time its load is sent, arms the load's deadline. Runs on
    /// ``taskControl``, which can be busy for seconds between a load's admission and its sending (see
    /// `control`): armed at admission, the deadline ran out for loads that had just been sent.
    private func send(_ task: URLSessionTask) {
        task.resume()
        lock.withLock {
            // A load that follows a redirect as a new task keeps the deadline armed when it was first
            // sent; one that has ended meanwhile needs none.
            guard resourceTimeout.isFinite, let load = loadOfTask[task.taskIdentifier],
                entries[load]?.deadline == nil
            else { return }
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.setEventHandler { [weak self] in self?.expire(load) }
            let time = DispatchTime.now() + max(0, entries[load]?.timeLeft ?? resourceTimeout)
            timer.schedule(deadline: time)
            entries[load]?.deadline = timer
            entries[load]?.deadlineTime = time
            timer.resume()
        }
    }

    /// Ends `load`, still running at its deadline: it fails with `.timedOut` if it has not failed yet,
    /// and its task is cancelled so the connection closes.
    private func expire(_ load: Int) {
        // Only the one that removes an entry cancels its task (see `urlSession(_:task:willPerformHTTPRedirection:...)`).
        let (removed, next) = lock.withLock { removeEntry(load) }
        let task = removed?.task
        let resumption = removed.flatMap { entry in entry.continuation.map { ($0, entry.url) } }
        removed?.stopWaitingForFetchSlot?()
        Self.control {
            if let next { self.send(next) }
            task?.cancel()
        }
        if let (continuation, url) = resumption { continuation.resume(returning: .failure(.timedOut(url))) }
    }

    /// Cancels `load` (and the task that carries it, if one is made) for a cancelled Swift task and
    /// resumes it with `.cancelled`.
    func cancel(_ load: Int) {
        // No entry: the load has ended, and whoever ended it has dealt with its task. Cancelling it anyway
        // could land while it waits for its redirect's completion handler, which then traps.
        let (entry, next): (Entry?, URLSessionTask?) = lock.withLock {
            guard let entry = entries[load] else { return (nil, nil) }
            guard entry.continuation != nil else {
                entries[load]?.cancelledBeforeStart = true
                return (nil, nil)
            }
            return removeEntry(load)
        }
        let (task, continuation) = (entry?.task, entry?.continuation)
        // Waiting for the fetch slot of the host it moved to: it never waits for a connection there.
        entry?.stopWaitingForFetchSlot?()
        if task != nil || next != nil {
            Self.control {
                task?.cancel()
                if let next { self.send(next) }
            }
        }
        continuation?.resume(returning: .failure(.cancelled))
    }

    /// Removes the entry of the load `task` carries and resumes it with the result `finish` computes
    /// from it.
    private func complete(_ task: URLSessionTask, _ finish: (Entry) -> Result<HTTPLoadedResponse, ImageLoadingError>) {
        var ended: Entry?  // released after the lock (see `removeEntry`)
        let (resumption, next): ((Continuation, Result<HTTPLoadedResponse, ImageLoadingError>)?, URLSessionTask?) =
            lock.withLock {
                guard let load = loadOfTask[task.taskIdentifier] else { return (nil, nil) }
                let (removed, next) = removeEntry(load)
                ended = removed
                guard let entry = removed, let continuation = entry.continuation else { return (nil, next) }
                return ((continuation, finish(entry)), next)
            }
        withExtendedLifetime(ended) {}
        if let next { Self.control { self.send(next) } }
        if let (continuation, result) = resumption { continuation.resume(returning: result) }
    }

    // MARK: URLSessionDataDelegate

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        enum Outcome {
            case proceed
            case drain(Continuation?, ImageLoadingError)
            case stop(ImageLoadingError)
        }
        let outcome: Outcome = lock.withLock {
            // Mutated in place through the index so the reserved body buffer is not copied later.
            guard let index = entryIndex(of: dataTask) else { return .proceed }
            let (url, byteLimit) = (entries.values[index].url, entries.values[index].byteLimit)
            guard let http = response as? HTTPURLResponse else {
                return .stop(.network(url: url, description: "not an HTTP response"))
            }
            // An informational answer (103 Early Hints, an unasked-for 100 Continue) comes before the
            // final one, which swift-corelibs-foundation reports next (RFC 9110 15.2). 101 is not one: it
            // switches protocols, which a load never asks for.
            if (100...199).contains(http.statusCode) && http.statusCode != 101 { return .proceed }
            // A content coding was not asked for (the loader sends `Accept-Encoding: identity`), and what
            // one decodes to is the server's choice: swift-corelibs-foundation decodes a 1 MB gzip body
            // of 1 GiB of zeros whole, however early the load fails (see `control`).
            // So an encoded body fails at its response, saying why, not at the size cap. A 304 has none.
            if http.statusCode != 304, let coding = Self.contentCoding(of: http) {
                guard (200...299).contains(http.statusCode) else {
                    return .stop(.httpStatus(code: http.statusCode, url: url))
                }
                return .stop(
                    .network(
                        url: url,
                        description: "the server sent the body with Content-Encoding \(coding), though asked "
                            + "for none; an encoded body is not read, as it can decompress to far more than "
                            + "the response-size cap"))
            }
            // 304 passes through: it answers a conditional request (the loader checks it asked one).
            guard (200...299).contains(http.statusCode) || http.statusCode == 304 else {
                let continuation = entries.values[index].continuation
                entries.values[index].continuation = nil
                entries.values[index].isDraining = true
                return .drain(continuation, .httpStatus(code: http.statusCode, url: url))
            }
            var length = http.expectedContentLength
            // A 304 has no body: its Content-Length, when it has one, is the image's (RFC 9110 8.6). A
            // transfer coding frames the body, and overrides a Content-Length sent with it (RFC 9112 6.3).
            let isFramedByLength = http.value(forHTTPHeaderField: "Transfer-Encoding") == nil
            if isFramedByLength, http.statusCode != 304, let field = http.value(forHTTPHeaderField: "Content-Length") {
                // One that is not a length leaves the body's end unknown, an error (RFC 9112 6.3): libcurl
                // reads what it can of it (1 of `1e5`, 0 of `0x10`), or past 64 bits on to the hang-up, and
                // that came back as the whole body.
                guard let announced = Self.contentLength(field) else {
                    return .stop(
                        .network(
                            url: url,
                            description: "the response's Content-Length (\(field.prefix(40))) is not a length, so "
                                + "its body cannot be told from one cut short"))
                }
                length = announced
            }
            if length >= 0, isFramedByLength, http.statusCode != 304 {
                guard length <= Int64(byteLimit) else {
                    return .stop(.responseTooLarge(url: url, byteLimit: byteLimit))
                }
                entries.values[index].expectedBytes = Int(length)
                // The length is only the server's word: reserved up to ``largestReservation``, the rest as it
                // comes. Under a cap of `Int.max`, a petabyte announced was an allocation that stopped the process.
                entries.values[index].body.reserveCapacity(Int(min(length, Int64(Self.largestReservation))))
            }
            entries.values[index].response = http
            return .proceed
        }
        switch outcome {
        case .proceed:
            completionHandler(.allow)
        case .drain(let continuation, let failure):
            completionHandler(.allow)
            continuation?.resume(returning: .failure(failure))
        case .stop(let failure):
            complete(dataTask) { _ in .failure(failure) }
            // swift-corelibs-foundation ignores the disposition, so cancel the task itself as well.
            completionHandler(.cancel)
            Self.control { dataTask.cancel() }
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // swift-corelibs-foundation unescapes a relative Location's path (`/a%2Fb.jpg` asked for
        // `/a/b.jpg`): resolved here against the redirecting URL as RFC 3986 does, escapes kept.
        var request = request
        var unsupported: URL?
        if let location = response.value(forHTTPHeaderField: "Location"), let base = response.url,
            let target = URL(string: location, relativeTo: base)?.absoluteURL
        {
            // It also keeps the redirecting host for a target without one, whatever its scheme:
            // `file:///etc/passwd` became `http://<host>/etc/passwd`. Only http(s) is followed; the load
            // ends now, and the redirect response that follows finds no entry.
            if !target.isRemote {
                unsupported = target
            } else if target.host != nil {
                // Followed as a new task, whose URL URLSession refuses with an upper-case scheme.
                request.url = target.withLowercaseScheme
            }
        }
        // The stored bytes answer the URL that was asked, through this redirect: they stay fresh no
        // longer than it does. A `302 no-cache` to an image that may be kept a year is asked again.
        let limit = HTTPCachePolicy.redirectLifetime(status: response.statusCode) {
            response.value(forHTTPHeaderField: $0)
        }
        // The validators sent are those of the response the URL led to last time. A temporary redirect
        // (302, 303, 307), or one that may not be kept, can lead elsewhere now. An entity tag names
        // that response's bytes, and another file answers it with a `304` only when it holds the same
        // ones; a date says nothing across files: an older file's `304` to `If-Modified-Since` would
        // keep the image the URL no longer shows (an avatar changed back to an older picture). So the
        // date is not sent on; without an entity tag the target is asked in full.
        let mayChange = !(HTTPCachePolicy.isPermanentRedirect(response.statusCode) && limit != 0)
        if mayChange { request.setValue(nil, forHTTPHeaderField: "If-Modified-Since") }
        let followed = request
        let targetHost = followed.url.map(Self.host(of:))
        // The completion handler is called only while the entry is there (under the lock) or after this
        // callback removed it: whoever else removes an entry cancels its task, and a task cancelled while it
        // waits for this handler makes a later call trap in swift-corelibs-foundation ("Received
        // callback for HTTP redirection, but we're not waiting for it"). No entry: the load has ended and
        // its task is cancelled or about to be; the handler is never called.
        enum Redirect {
            case ended, followed
            /// The load fails; its entry, removed, is released after the lock (see `removeEntry`).
            case fail(Entry?, ImageLoadingError, next: URLSessionTask?)
            case moved(load: Int, freed: URLSessionTask?, fetchSlot: FetchSlotHold?)
        }
        let redirect: Redirect = lock.withLock {
            guard let index = entryIndex(of: task) else { return .ended }
            let load = entries.keys[index]
            if let unsupported {
                let (removed, next) = removeEntry(load)
                return .fail(removed, .unsupportedURL(unsupported), next: next)
            }
            if let limit {
                let earlier = entries.values[index].redirectLifetime ?? limit
                entries.values[index].redirectLifetime = min(earlier, limit)
            }
            if mayChange { entries.values[index].followedRedirectThatMayChange = true }
            entries.values[index].redirects += 1
            guard entries.values[index].redirects <= Self.redirectLimit else {
                let (removed, next) = removeEntry(load)
                let failure = ImageLoadingError.network(
                    url: removed?.url ?? followed.url!, description: "more than \(Self.redirectLimit) redirects")
                return .fail(removed, failure, next: next)
            }
            // A redirect to another host is followed as a new task of the load, made on the control queue
            // (see `control`); the task redirected ends here and hands its connection back, and the load
            // waits for one to the new host.
            let (isRunning, host) = (entries.values[index].isRunning, entries.values[index].host)
            guard let targetHost, isRunning, targetHost != host, !isInvalidated else {
                completionHandler(followed)
                return .followed
            }
            // Answered under the lock, as the task leaves the load: nothing cancels it from then on, and
            // a loader that goes away once the load has ended cannot invalidate the session in between.
            // The redirect response becomes the task's last; it finds no entry.
            completionHandler(nil)
            loadOfTask[task.taskIdentifier] = nil
            entries.values[index].task = nil
            entries.values[index].host = targetHost
            entries.values[index].isRunning = false
            let freed = freeConnection(to: host)
            // A load with a fetch slot gets the new host's first, and only then gets in line for a
            // connection: in line (or holding one) while it waits, it could keep a connection from the
            // loads holding the slots it waits for.
            if let fetchSlot = entries.values[index].fetchSlot {
                entries.values[index].isWaitingForFetchSlot = true
                if let deadline = entries.values[index].deadline, let time = entries.values[index].deadlineTime {
                    deadline.cancel()
                    // In unsigned nanoseconds: a deadline past what a dispatch time holds (a resource timeout
                    // over ~292 years) is `distantFuture`, whose nanoseconds do not fit an `Int64`.
                    let now = DispatchTime.now()
                    entries.values[index].timeLeft =
                        time > now ? Double(time.uptimeNanoseconds - now.uptimeNanoseconds) / 1e9 : 0
                    entries.values[index].deadline = nil
                }
                return .moved(load: load, freed: freed, fetchSlot: fetchSlot)
            }
            // In line for the new host at once, at the load's priority, as a load that starts is.
            admitMoved(load)
            return .moved(load: load, freed: freed, fetchSlot: nil)
        }
        switch redirect {
        case .ended, .followed:
            break
        case .fail(let removed, let failure, let next):
            completionHandler(nil)
            if let next { Self.control { self.send(next) } }
            removed?.continuation?.resume(returning: .failure(failure))
        case .moved(let load, let freed, nil):
            Self.control {
                if let freed { self.send(freed) }
                self.makeTask(of: load, for: followed, in: session)
            }
        case .moved(let load, let freed, let fetchSlot?):
            if let freed { Self.control { self.send(freed) } }
            guard let target = followed.url else { return }
            let stop = fetchSlot.move(to: target) { [self] in
                let admitted = lock.withLock { () -> Bool in
                    guard entries[load]?.isWaitingForFetchSlot == true else { return false }
                    entries[load]?.isWaitingForFetchSlot = false
                    entries[load]?.stopWaitingForFetchSlot = nil
                    admitMoved(load)
                    return true
                }
                if admitted { Self.control { self.makeTask(of: load, for: followed, in: session) } }
            }
            // Ended before the wait could be recorded with it (cancelled, or at its deadline): ended here.
            let ended = lock.withLock { () -> Bool in
                guard let entry = entries[load] else { return true }
                if entry.isWaitingForFetchSlot { entries[load]?.stopWaitingForFetchSlot = stop }
                return false
            }
            if ended { stop() }
        }
    }

    /// Puts `load`, moved to another host by a redirect, in line for a connection to it at the load's
    /// priority, as a load that starts is. Call with `lock` held.
    private func admitMoved(_ load: Int) {
        guard let entry = entries[load] else { return }
        let medium: @Sendable () -> UInt8 = { TaskPriority.medium.rawValue }
        _ = admit(load, to: entry.host, priority: entry.priority ?? medium)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let failure: ImageLoadingError? = lock.withLock {
            // Appends in place through the index: a copy of the entry alive during the append would
            // make every append copy the whole body.
            guard let index = entryIndex(of: dataTask) else { return nil }
            let (url, byteLimit) = (entries.values[index].url, entries.values[index].byteLimit)
            if entries.values[index].isDraining {
                entries.values[index].drainedBytes += data.count
                // An error page past the drain limit is stopped like an oversized body.
                return entries.values[index].drainedBytes > min(byteLimit, Self.drainLimit)
                    ? .responseTooLarge(url: url, byteLimit: byteLimit) : nil
            }
            guard entries.values[index].body.count + data.count <= byteLimit else {
                return .responseTooLarge(url: url, byteLimit: byteLimit)
            }
            entries.values[index].body.append(data)
            return nil
        }
        if let failure {
            // Stop the download now rather than after the server has sent everything.
            complete(dataTask) { _ in .failure(failure) }
            Self.control { dataTask.cancel() }
        }
    }

    /// Where every task is made, resumed and cancelled, and every session invalidated, one at a time, in
    /// the order asked. Internal so that a test can keep it busy.
    static let taskControl = DispatchQueue(label: "AsyncImageCache.HTTPTaskTable.taskControl", qos: .utility)

    /// Runs `work` (making tasks, their `resume()` and `cancel()`, a session's invalidation) on
    /// ``taskControl``, never on the thread that asks. On Linux each of them waits for
    /// swift-corelibs-foundation's work queue (`dataTask(with:)` numbers its task there), which every
    /// session in the process shares and libcurl holds for as long as it has body bytes to hand over:
    /// for a fast body, until its end (3.4 s for a gzip body of 1 GiB of zeros; minutes for a large
    /// redirect body). Waiting there, a delegate callback held back the callbacks that drop those bytes,
    /// and every chunk piled up in the delegate queue meanwhile (1.1 GB resident); a load's cancellation
    /// held the canceller's thread (the main thread, for a view that goes away) and the cancelled load's
    /// result; a load that started held a thread of the Swift pool (two on a two-core machine); a loader
    /// that went away held the thread that let it go.
    private static func control(_ work: @escaping @Sendable () -> Void) {
        taskControl.async(execute: work)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let final = task.response as? HTTPURLResponse
        complete(task) { entry in Self.result(of: entry, error: error, final: final) }
    }

    /// The outcome of the load of `entry`, ended by `error` (`nil` for success); `final` is the task's
    /// last response, which the delegate may not have been shown.
    private static func result(
        of entry: Entry, error: (any Error)?, final: HTTPURLResponse?
    ) -> Result<HTTPLoadedResponse, ImageLoadingError> {
        let code = (error as? URLError)?.code.rawValue ?? (error as NSError?)?.code
        if error != nil, code == NSURLErrorTimedOut { return .failure(.timedOut(entry.url)) }
        // Checked before the error: a closed connection may be reported as success or as "connection lost".
        if let expected = entry.expectedBytes, entry.body.count < expected {
            let received = entry.body.count
            return .failure(.truncatedResponse(url: entry.url, expectedBytes: expected, receivedBytes: received))
        }
        if let error {
            if code == NSURLErrorCancelled { return .failure(.cancelled) }
            if code == NSURLErrorBadURL { return .failure(.network(url: entry.url, description: badURL(entry.url))) }
            let description = transportDescription(
                of: error, code: code, afterResponse: entry.response != nil || final != nil)
            return .failure(.network(url: entry.url, description: description))
        }
        guard let response = entry.response else {
            // swift-corelibs-foundation shows a delegate no redirect status (301-303, 305-308) that it
            // does not follow, as one without a Location: the task has it.
            if let final, !(200...299).contains(final.statusCode) {
                return .failure(.httpStatus(code: final.statusCode, url: entry.url))
            }
            return .failure(.network(url: entry.url, description: "no response"))
        }
        if response.statusCode == 206 {
            // No request asks for a range: a 206 is the image only when its one range is all of it.
            let range = response.value(forHTTPHeaderField: "Content-Range").flatMap(Self.contentRange)
            guard let range, let length = range.length else {
                return .failure(.network(url: entry.url, description: "206 Partial Content without the image's length"))
            }
            guard range.first == 0, length == entry.body.count else {
                let received = entry.body.count
                return .failure(.truncatedResponse(url: entry.url, expectedBytes: length, receivedBytes: received))
            }
        }
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String { headers[name] = value as? String ?? "\(value)" }
        }
        return .success(
            HTTPLoadedResponse(
                body: entry.body, statusCode: response.statusCode, headers: headers,
                redirectLifetime: entry.redirectLifetime,
                followedRedirectThatMayChange: entry.followedRedirectThatMayChange
            ))
    }
}
