extension ImageStore {
    /// Starts loading `requests` ahead of need, at low priority, first to last.
    ///
    /// Prefetches fetch and decode like ordinary loads and fill the same caches, but a visible
    /// load waiting for a decode slot always goes first, and a prefetch that a visible load joins
    /// is raised to its priority. A prefetch decodes and resizes on its slot's thread alone, where a
    /// visible load may spread its resize over idle cores; one that a visible load joins, even while it
    /// decodes, runs each step that starts after that as the visible load would. Requests already cached
    /// or already prefetching are skipped, except a local file in memory: its prefetch checks the file's version
    /// in the background, as a load does, and decodes it again only if it changed. A prefetch begun
    /// before ``removeAll()`` does not count (it keeps nothing), and is replaced by a new one.
    /// At most eight prefetches (twice the decode concurrency, when that is more) run at once; the
    /// others wait their turn, so a long list holds the bytes of only a few images at a time.
    /// Prefetches keep the store alive while they run or wait, each one that ends starting the next:
    /// call ``stopPrefetching()`` before letting go of a store that is still prefetching.
    ///
    /// ```swift
    /// store.startPrefetching(upcomingRows.map { ImageRequest(url: $0.url, targetWidth: 320) })
    /// ```
    public func startPrefetching(_ requests: [ImageRequest]) {
        let uncached = requests.filter { request in
            // A local file may have changed since it was decoded, so its prefetch always runs and looks
            // at the file off this thread (the load's own memory check): unchanged, one stat, no decode.
            if request.url.isFileURL { return true }
            guard let hit = variants.value(for: request) else { return true }
            markDiskUse(of: request.url, hit.diskUse)
            return false
        }
        // A prefetch begun before a `removeAll()`, or before a `removeImage(for:)` of its URL, keeps
        // nothing: the request is prefetched afresh.
        let generation = disk.generation
        let replacements = uncached.map { replacementCount(of: $0.url) }
        let replaced = prefetches.withLock { table in
            for (request, replacement) in zip(uncached, replacements) {
                let running = table.running[request]
                if running?.generation != generation || running?.replacement != replacement { table.enqueue(request) }
            }
            return startWaitingPrefetches(&table)
        }
        replaced.forEach { $0.cancel() }
    }

    /// Stops prefetching `requests`, running or waiting their turn. Work that a visible load also
    /// waits for goes on.
    public func stopPrefetching(_ requests: [ImageRequest]) {
        let tasks = prefetches.withLock { table in
            let tasks = requests.compactMap { request in
                table.removeWaiting(request)
                return table.running.removeValue(forKey: request)?.task
            }
            return tasks + startWaitingPrefetches(&table)
        }
        tasks.forEach { $0.cancel() }
    }

    /// Stops every prefetch, running or waiting.
    public func stopPrefetching() {
        let tasks = prefetches.withLock { table in
            // The numbers go on rising: a stopped prefetch ending later must not match a new one.
            defer { table = PrefetchTable(lastID: table.lastID) }
            return table.running.values.map(\.task)
        }
        tasks.forEach { $0.cancel() }
    }

    /// The most prefetches that run at once: ``loadsAhead(ofDecodeSlots:)``.
    var prefetchConcurrency: Int { Self.loadsAhead(ofDecodeSlots: decodeSlots.limit) }

    /// How many loads of one kind (prefetches; visible loads) may fetch ahead of `slots` decode slots:
    /// enough to keep the slots busy while the next ones fetch, few enough that their bytes stay small.
    /// (A `decodeConcurrency` near `Int.max`, "no limit", caps it at `Int.max` instead of overflowing.)
    static func loadsAhead(ofDecodeSlots slots: Int) -> Int { max(8, slots > Int.max / 2 ? .max : 2 * slots) }

    /// Starts waiting prefetches, first queued first, while fewer than ``prefetchConcurrency`` run.
    /// Returns the prefetches of the same requests begun before a `removeAll()` that they replace, for the
    /// caller to cancel once the lock is released.
    @discardableResult
    private func startWaitingPrefetches(_ table: inout PrefetchTable) -> [Task<Void, Never>] {
        var replaced: [Task<Void, Never>] = []
        while table.running.count < prefetchConcurrency, let request = table.nextWaiting() {
            table.lastID += 1
            let id = table.lastID
            // The entry is in place before the task can end: ending takes the same lock.
            let task = Task(priority: .utility) { [self] in
                _ = await prepared(request, priority: .low)
                let replaced = prefetches.withLock { table in
                    // Only its own entry: a stopped prefetch may end after the request started again.
                    if table.running[request]?.id == id { table.running[request] = nil }
                    return startWaitingPrefetches(&table)
                }
                replaced.forEach { $0.cancel() }
            }
            if let old = table.running[request] { replaced.append(old.task) }
            table.running[request] = (id, task, disk.generation, replacementCount(of: request.url))
        }
        return replaced
    }
}

/// The prefetches running, each under the number it started with and the disk tier's generation and its
/// URL's replacement count then, and those waiting their turn.
struct PrefetchTable {
    var lastID: UInt64 = 0
    var running: [ImageRequest: (id: UInt64, task: Task<Void, Never>, generation: Int, replacement: Int)] = [:]
    /// The requests in line from `queueStart` on, each with the ticket it was put in line with. One
    /// stopped while it waited stays in line, skipped when its turn comes, so that stopping never
    /// searches the line; put in line again, it takes a new ticket at the end, and its old place is
    /// skipped too.
    private var queue: [(request: ImageRequest, ticket: UInt64)] = []
    private var queueStart = 0
    private var lastTicket: UInt64 = 0
    /// The requests in line still waiting to start, each under the ticket of its place.
    private var waiting: [ImageRequest: UInt64] = [:]

    init(lastID: UInt64 = 0) {
        self.lastID = lastID
    }

    /// Puts `request` at the end of the line unless it already waits.
    mutating func enqueue(_ request: ImageRequest) {
        guard waiting[request] == nil else { return }
        lastTicket += 1
        waiting[request] = lastTicket
        queue.append((request, lastTicket))
        // Requests stopped while they waited stay in line until their turn. While every prefetch
        // runs long (slow downloads), a list that starts and stops the same rows as it scrolls would
        // add them without end: they go once they are most of the line.
        if queue.count - queueStart > 2 * waiting.count + 32 {
            queue = queue[queueStart...].filter { waiting[$0.request] == $0.ticket }
            queueStart = 0
        }
    }

    /// The requests in line, stopped ones not yet passed included (for tests).
    var lineLength: Int { queue.count - queueStart }

    mutating func removeWaiting(_ request: ImageRequest) {
        waiting[request] = nil
    }

    /// Takes the first request in line still waiting; `nil` when none is.
    mutating func nextWaiting() -> ImageRequest? {
        while queueStart < queue.count {
            let (request, ticket) = queue[queueStart]
            queueStart += 1
            if waiting[request] == ticket {
                waiting[request] = nil
                // The passed part goes once it is most of the line, so taking stays O(1) on average.
                if queueStart * 2 > queue.count {
                    queue.removeFirst(queueStart)
                    queueStart = 0
                }
                return request
            }
        }
        queue = []
        queueStart = 0
        return nil
    }
}
