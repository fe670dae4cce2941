import Foundation

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
    /// before ``removeAll()`` does not count (it keeps nothing fetched before that call), and is replaced
    /// by a new one.
    /// At most eight prefetches (twice the decode concurrency, when that is more) of one source run at
    /// once: of one host, of the local files, or of the remote images already in the disk tier, whatever
    /// their host; and at most four sources' worth in all. The others wait their turn, so a long list holds
    /// the bytes of only a few images at a time, and a host that does not answer holds up only its own
    /// prefetches until their timeout, not those of other hosts or of its images on disk or waiting to be
    /// written there (looked up with one `stat` per remote request, on the calling thread; a prefetch that a
    /// redirect leads to another host counts under its first).
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
        let sources = uncached.map { fetchSource(of: $0.url) }
        let replaced = prefetches.withLock { table in
            for ((request, replacement), source) in zip(zip(uncached, replacements), sources) {
                let running = table.running[request]
                if running?.generation != generation || running?.replacement != replacement {
                    table.enqueue(request, source: source)
                }
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

    /// The most prefetches of one source that run at once: ``loadsAhead(ofDecodeSlots:)``. The sources are
    /// those of ``fetchSlots`` (a host; the local files; a scheme), the remote images already in the disk
    /// tier counting under the disk tier's own (``FetchSlots/diskSource``): a host that does not answer holds
    /// up only its own prefetches, not those of other hosts, of files, or of its images on disk.
    var prefetchConcurrency: Int { Self.loadsAhead(ofDecodeSlots: decodeSlots.limit) }

    /// The most prefetches that run at once, every source's: ``prefetchConcurrency`` for each of
    /// ``prefetchSourcesAtOnce`` sources, so a list of images from hundreds of hosts does not open hundreds
    /// of downloads at once, nor hold the bytes of hundreds of images waiting for a decode slot.
    var prefetchTotalConcurrency: Int {
        let (total, overflow) = prefetchConcurrency.multipliedReportingOverflow(by: Self.prefetchSourcesAtOnce)
        return overflow ? .max : total
    }

    /// How many sources' worth of prefetches run at once (``prefetchTotalConcurrency``): so many sources
    /// that stop answering at once hold up the others' prefetches until the request's timeout.
    static let prefetchSourcesAtOnce = 4

    /// How many loads of one kind (prefetches; visible loads) may fetch ahead of `slots` decode slots:
    /// enough to keep the slots busy while the next ones fetch, few enough that their bytes stay small.
    /// (A `decodeConcurrency` near `Int.max`, "no limit", caps it at `Int.max` instead of overflowing.)
    static func loadsAhead(ofDecodeSlots slots: Int) -> Int { max(8, slots > Int.max / 2 ? .max : 2 * slots) }

    /// Starts waiting prefetches, first queued first, of the sources with fewer than ``prefetchConcurrency``
    /// running, while fewer than ``prefetchTotalConcurrency`` run in all. Returns the prefetches of the same
    /// requests begun before a `removeAll()` that they replace, for the caller to cancel once the lock is
    /// released.
    @discardableResult
    private func startWaitingPrefetches(_ table: inout PrefetchTable) -> [Task<Void, Never>] {
        var replaced: [Task<Void, Never>] = []
        let (perSource, total) = (prefetchConcurrency, prefetchTotalConcurrency)
        var runningBySource: [String: Int] = [:]
        for entry in table.running.values { runningBySource[entry.source, default: 0] += 1 }
        while table.running.count < total,
            let (request, source) = table.nextWaiting(where: { runningBySource[$0, default: 0] < perSource })
        {
            runningBySource[source, default: 0] += 1
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
            if let old = table.running[request] {
                replaced.append(old.task)
                runningBySource[old.source, default: 1] -= 1
            }
            table.running[request] = (id, task, source, disk.generation, replacementCount(of: request.url))
        }
        return replaced
    }
}

/// The prefetches running, each under the number it started with, the source it counts under, and the
/// disk tier's generation and its URL's replacement count then, and those waiting their turn, in a line
/// per source.
struct PrefetchTable {
    var lastID: UInt64 = 0
    var running:
        [ImageRequest: (id: UInt64, task: Task<Void, Never>, source: String, generation: Int, replacement: Int)] =
            [:]
    /// The line of each source: the requests in it from `start` on, each with the ticket it was put in line
    /// with, and how many of them still wait. One stopped while it waited stays in line, skipped when its
    /// turn comes, so that stopping never searches the line; put in line again, it takes a new ticket at the
    /// end, and its old place is skipped too. Only sources with a request waiting have a line.
    private struct Line {
        var queue: [(request: ImageRequest, ticket: UInt64)] = []
        var start = 0
        var waitingCount = 0
        var length: Int { queue.count - start }
    }
    private var lines: [String: Line] = [:]
    private var lastTicket: UInt64 = 0
    /// The requests in line still waiting to start, each under the ticket of its place and its source.
    private var waiting: [ImageRequest: (ticket: UInt64, source: String)] = [:]

    init(lastID: UInt64 = 0) {
        self.lastID = lastID
    }

    /// Puts `request` at the end of `source`'s line unless it already waits.
    mutating func enqueue(_ request: ImageRequest, source: String = "") {
        guard waiting[request] == nil else { return }
        lastTicket += 1
        waiting[request] = (lastTicket, source)
        var line = lines[source] ?? Line()
        line.queue.append((request, lastTicket))
        line.waitingCount += 1
        // Requests stopped while they waited stay in line until their turn. While every prefetch
        // runs long (slow downloads), a list that starts and stops the same rows as it scrolls would
        // add them without end: they go once they are most of the line.
        if line.length > 2 * line.waitingCount + 32 {
            line.queue = line.queue[line.start...].filter { waiting[$0.request]?.ticket == $0.ticket }
            line.start = 0
        }
        lines[source] = line
    }

    /// The requests in line, every source's, stopped ones not yet passed included (for tests).
    var lineLength: Int { lines.values.reduce(0) { $0 + $1.length } }

    /// Stops `request` waiting: its place is skipped when its turn comes, and a line left with nothing
    /// waiting goes at once, so that the lines of sources without room (or of every source, while the
    /// prefetches running fill ``ImageStore/prefetchTotalConcurrency``) do not keep a stopped request
    /// per source seen.
    mutating func removeWaiting(_ request: ImageRequest) {
        guard let (_, source) = waiting.removeValue(forKey: request) else { return }
        lines[source]?.waitingCount -= 1
        if lines[source]?.waitingCount == 0 { lines[source] = nil }
    }

    /// Takes the first request in line still waiting; `nil` when none is.
    mutating func nextWaiting() -> ImageRequest? {
        nextWaiting { _ in true }?.request
    }

    /// Takes the request put in line first of those still waiting whose source `hasRoom`, with its source;
    /// `nil` when none is.
    mutating func nextWaiting(where hasRoom: (String) -> Bool) -> (request: ImageRequest, source: String)? {
        var first: (source: String, ticket: UInt64)?
        for source in Array(lines.keys) where hasRoom(source) {
            guard var line = lines[source] else { continue }
            // Stopped requests at the head are passed, so each is looked at once.
            while line.start < line.queue.count,
                waiting[line.queue[line.start].request]?.ticket
                    != line.queue[line.start].ticket
            {
                line.start += 1
            }
            guard line.start < line.queue.count else {
                lines[source] = nil
                continue
            }
            lines[source] = line
            let ticket = line.queue[line.start].ticket
            if first == nil || ticket < first!.ticket { first = (source, ticket) }
        }
        guard let source = first?.source, var line = lines[source] else { return nil }
        let request = line.queue[line.start].request
        waiting[request] = nil
        line.start += 1
        line.waitingCount -= 1
        if line.start == line.queue.count {
            lines[source] = nil
            return (request, source)
        }
        // The passed part goes once it is most of the line, so taking stays O(1) on average.
        if line.start * 2 > line.queue.count {
            line.queue.removeFirst(line.start)
            line.start = 0
        }
        lines[source] = line
        return (request, source)
    }
}
