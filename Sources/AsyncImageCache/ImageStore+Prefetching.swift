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
            prefetches.withLock { running in
                guard running[request] == nil else { return }
                running[request] = Task(priority: .utility) { [self] in
                    _ = await prepared(request, priority: .low)
                    prefetches.withLock { _ = $0.removeValue(forKey: request) }
                }
            }
        }
    }

    /// Stops prefetching `requests`. Work that a visible load also waits for goes on.
    public func stopPrefetching(_ requests: [ImageRequest]) {
        let tasks = prefetches.withLock { running in requests.compactMap { running.removeValue(forKey: $0) } }
        tasks.forEach { $0.cancel() }
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        let tasks = prefetches.withLock { running in
            defer { running = [:] }
            return Array(running.values)
        }
        tasks.forEach { $0.cancel() }
    }
}
