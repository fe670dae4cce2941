extension ImageStore {
    /// Starts loading `requests` ahead of need, at low priority.
    ///
    /// Prefetches fetch and decode like ordinary loads and fill the same caches, but a visible
    /// load waiting for a decode slot always goes first, and a prefetch that a visible load joins
    /// is raised to its priority. Requests already cached or already prefetching are skipped.
    ///
    /// ```swift
    /// store.startPrefetching(upcomingRows.map { ImageRequest(url: $0.url, targetWidth: 320) })
    /// ```
    public func startPrefetching(_ requests: [ImageRequest]) {
        for request in requests where variants.value(for: request) == nil {
            prefetches.withLock { table in
                guard table.running[request] == nil else { return }
                table.lastID += 1
                let id = table.lastID
                // The entry is in place before the task can end: ending takes the same lock.
                let task = Task(priority: .utility) { [self] in
                    _ = await prepared(request, priority: .low)
                    // Only its own entry: a stopped prefetch may end after the request started again.
                    prefetches.withLock { table in
                        if table.running[request]?.id == id { table.running[request] = nil }
                    }
                }
                table.running[request] = (id, task)
            }
        }
    }

    /// Stops prefetching `requests`. Work that a visible load also waits for goes on.
    public func stopPrefetching(_ requests: [ImageRequest]) {
        let tasks = prefetches.withLock { table in requests.compactMap { table.running.removeValue(forKey: $0)?.task } }
        tasks.forEach { $0.cancel() }
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        let tasks = prefetches.withLock { table in
            defer { table.running = [:] }
            return table.running.values.map(\.task)
        }
        tasks.forEach { $0.cancel() }
    }
}

/// The prefetches running, each under the number it started with.
struct PrefetchTable {
    var lastID: UInt64 = 0
    var running: [ImageRequest: (id: UInt64, task: Task<Void, Never>)] = [:]
}
