import Foundation

/// The slots a store's visible loads hold from the start of their fetch until they get a decode slot
/// (``ImageStore/fetchSlots``): they bound the bytes fetched ahead of the decodes.
///
/// One set per source: per host for remote URLs (scheme, host and port, as the connection limit counts
/// them), one for local files and `data:` URLs. A host that answers slowly, or not at all until the
/// timeout, holds its own loads' slots only: the loads of other hosts, and of files, go on meanwhile, as
/// they would without the bound. A set goes once no load holds or waits for one of its slots.
final class FetchSlots: Sendable {
    /// The slots of each source.
    let limit: Int
    private let pools = LockedBox([String: Pool]())

    private struct Pool {
        let slots: DecodeSlots
        /// The loads that hold or wait for one of `slots`.
        var users: Int
    }

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Waits for a slot of `url`'s source, visible loads first as in ``DecodeSlots``; returns the closure
    /// that gives it back, which does so once however often it is called, or `nil` when the task is
    /// cancelled before it gets one.
    func slot(for url: URL, priority: RunPriority) async -> (@Sendable () -> Void)? {
        let source = Self.source(of: url)
        let slots = pools.withLock { pools -> DecodeSlots in
            var pool = pools[source] ?? Pool(slots: DecodeSlots(limit: limit), users: 0)
            pool.users += 1
            pools[source] = pool
            return pool.slots
        }
        guard let release = await slots.slot(priority: priority) else {
            leave(source)
            return nil
        }
        let isReleased = LockedBox(false)
        return { [self] in
            let first = isReleased.withLock { released -> Bool in
                defer { released = true }
                return !released
            }
            guard first else { return }
            release()
            leave(source)
        }
    }

    private func leave(_ source: String) {
        pools.withLock { pools in
            guard var pool = pools[source] else { return }
            pool.users -= 1
            pools[source] = pool.users > 0 ? pool : nil
        }
    }

    /// The slots held now, every source's (for tests and diagnostics).
    var busyCount: Int { pools.withLock { Array($0.values) }.reduce(0) { $0 + $1.slots.busyCount } }

    /// The loads waiting for a slot, every source's (for tests and diagnostics).
    var waitingCount: Int { pools.withLock { Array($0.values) }.reduce(0) { $0 + $1.slots.waitingCount } }

    /// The sources that have a set now (for tests).
    var sourceCount: Int { pools.withLock { $0.count } }

    /// The key of `url`'s set: ``HTTPTaskTable/host(of:)`` for a remote URL, `""` for the others.
    static func source(of url: URL) -> String {
        url.isRemote ? HTTPTaskTable.host(of: url) : ""
    }
}
