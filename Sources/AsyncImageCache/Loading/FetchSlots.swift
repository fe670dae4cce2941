import Foundation

/// The slots a store's visible loads hold from the start of their fetch until they get a decode slot
/// (``ImageStore/fetchSlots``): they bound the bytes fetched ahead of the decodes.
///
/// One set per source: per scheme, host and port for remote URLs (as the connection limit counts them),
/// per scheme for the others, so remote hosts, local files, `data:` URLs and each scheme a custom
/// ``DataLoading`` serves have sets of their own; a remote image whose bytes are in the disk tier is read
/// from there, not asked of its host, and takes a slot of the disk tier's set (``diskSource``), so that
/// its host's loads that hang do not hold it up. A source that answers slowly, or not at all until the
/// timeout, holds its own loads' slots only: the loads of other hosts, of files and of other schemes go
/// on meanwhile, as they would without the bound. A load that follows a redirect to another host moves to that host's
/// set (``FetchSlotHold``): it gives its slot back and is sent there once it holds one of the new host's,
/// so loads of one host that redirect to a host that does not answer hold up only the loads of the
/// host they wait for, and every host's slots bound the bytes fetched from it, whoever redirected to it.
/// A set goes once no load holds or waits for one of its slots.
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

    /// Waits for a slot of `url`'s source, visible loads first as in ``DecodeSlots``: returns it with the
    /// closure that gives it back (once, however often it is called); ``DecodeSlots/Held/cancelled`` when
    /// the task is cancelled before it gets one; ``DecodeSlots/Held/notNeeded`` when `url`'s bytes arrive
    /// meanwhile (``bytesArrived(for:)``, or `isNeeded` false as it starts to wait), so that a load of
    /// another width of an image being fetched decodes the bytes as they come, not after the loads queued
    /// ahead of it (behind a stalled host, until their timeout). A slot for a fetch of `url` that a
    /// redirect led to `location` (``FetchSlotHold``) is one of `location`'s source.
    ///
    /// `source` names the set outright instead (``diskSource``).
    ///
    /// With `endsWhenLowered`, a wait also ends without a slot once only prefetches want the run
    /// (``DecodeSlots/slot(priority:tag:isNeeded:endsWhenLowered:afterRelease:)``).
    func slot(
        for url: URL, at location: URL? = nil, in source: String? = nil, priority: RunPriority,
        endsWhenLowered: Bool = false, isNeeded: @escaping @Sendable () -> Bool
    ) async -> DecodeSlots.Held {
        let source = source ?? Self.source(of: location ?? url)
        let slots = pools.withLock { pools -> DecodeSlots in
            var pool = pools[source] ?? Pool(slots: DecodeSlots(limit: limit), users: 0)
            pool.users += 1
            pools[source] = pool
            return pool.slots
        }
        let held = await slots.slot(
            priority: priority, tag: url.cacheKey, isNeeded: isNeeded, endsWhenLowered: endsWhenLowered
        ) { [self] in
            leave(source)
        }
        if case .slot = held { return held }
        leave(source)
        return held
    }

    /// Lets the loads of `url` that wait for a slot go on without one: its bytes are in memory now, where
    /// their `isNeeded` sees them. Every source's: a load that a redirect moved waits at its target's.
    func bytesArrived(for url: URL) {
        let sets = pools.withLock { $0.values.map(\.slots) }
        for slots in sets { slots.dismiss(tag: url.cacheKey) }
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

    /// The key of `url`'s set: for a remote URL its scheme, host and port (``HTTPTaskTable/host(of:)``);
    /// for any other, its scheme alone. A custom loader's source may be as slow as a remote host: sharing
    /// one set with files and `data:` URLs, its stalled loads held up theirs. But its URL's host need not
    /// name a server (`ph://<asset id>`, `ipfs://<cid>`): a set per host would be a set per image, and a
    /// burst of its rows would fetch every image at once.
    static func source(of url: URL) -> String {
        url.isRemote ? HTTPTaskTable.host(of: url) : "\(url.scheme?.lowercased() ?? ""):"
    }

    /// The set of the remote images read from the disk tier, whatever their host: the key of no URL's
    /// source (a scheme holds no space).
    static let diskSource = "disk tier:"
}
