import Dispatch

/// How urgently a load is wanted: visible loads go before prefetches.
enum ImageLoadPriority: Int, Sendable, Comparable {
    /// A prefetch: runs when no visible load is waiting for a decode slot.
    case low = 0
    /// A load for something on screen; the default.
    case normal = 1

    /// Whether `lhs` is less urgent than `rhs`: ``low`` comes before ``normal``.
    static func < (lhs: ImageLoadPriority, rhs: ImageLoadPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The priority of one in-flight run: the highest of its waiters' priorities. A waiter that is itself
/// a run (a load's decode waiting for the download it shares) counts at that run's priority as it is
/// whenever this one is read, so that a visible load joining or leaving it raises or lowers this run
/// too.
final class RunPriority: Sendable {
    private struct State {
        /// The highest priority of the waiters that are not runs.
        var own: ImageLoadPriority
        /// The priorities of the runs that wait for this one, once per waiter.
        var followed: [RunPriority] = []
        /// The runs that follow this one (it waits for them), once per ``follow(_:)``: a run lowered may
        /// leave them low too, with nothing set on them.
        var followers: [Follower] = []
        /// Called when ``set(to:)`` leaves the run at ``ImageLoadPriority/low`` (``whenLowered(_:)``).
        var onLowered: (@Sendable () -> Void)?
    }

    /// A run that follows this one, weakly: the runs followed do not keep the run that waits for them.
    private struct Follower {
        weak var run: RunPriority?
    }

    private let state: LockedBox<State>

    init(_ priority: ImageLoadPriority) {
        state = LockedBox(State(own: priority))
    }

    var current: ImageLoadPriority {
        let (own, followed) = state.withLock { ($0.own, $0.followed) }
        // Read outside the lock: a followed run's priority has a lock of its own.
        return followed.reduce(own) { max($0, $1.current) }
    }

    func raise(to priority: ImageLoadPriority) {
        state.withLock { $0.own = max($0.own, priority) }
    }

    /// Counts `run` (the priority of a run that waits for this one) as it rises and falls, until
    /// ``stopFollowing(_:)``: a prefetch's download goes up with a visible load that joins the
    /// prefetch, and back down when that load leaves.
    func follow(_ run: RunPriority) {
        state.withLock { $0.followed.append(run) }
        run.state.withLock { $0.followers.append(Follower(run: self)) }
    }

    /// Stops counting `run` once (its waiter has left).
    func stopFollowing(_ run: RunPriority) {
        let followed = state.withLock { state -> Bool in
            guard let index = state.followed.firstIndex(where: { $0 === run }) else { return false }
            state.followed.remove(at: index)
            return true
        }
        guard followed else { return }
        run.state.withLock { state in
            if let index = state.followers.firstIndex(where: { $0.run === self }) { state.followers.remove(at: index) }
        }
    }

    /// Sets the priority of the waiters that are not runs, lower as well: the waiter that raised it
    /// has left.
    func set(to priority: ImageLoadPriority) {
        let (onLowered, followers) = state.withLock { state -> ((@Sendable () -> Void)?, [RunPriority]) in
            state.own = priority
            return (state.onLowered, state.followers.compactMap(\.run))
        }
        guard current == .low else { return }
        onLowered?()
        // Called outside the lock: each follower reads the runs it follows, this one among them.
        for follower in followers { follower.followedRunWasLowered() }
    }

    /// Calls the handler of ``whenLowered(_:)`` if this run is low now that a run it follows was lowered:
    /// a download that only a prefetch waits for once the visible load of that width left its run.
    private func followedRunWasLowered() {
        let onLowered = state.withLock { $0.onLowered }
        if let onLowered, current == .low { onLowered() }
    }

    /// Calls `body` whenever ``set(to:)`` leaves the run at ``ImageLoadPriority/low``, its visible waiters
    /// gone (only prefetches still want it), also when it sets a run that this one follows (a download's
    /// run follows the runs of the widths that wait for it), and at once if it is low already: a visible
    /// run gives back its slot of ``ImageStore/fetchSlots`` as it turns into a prefetch. One handler: a
    /// later call replaces it. `body` may run under the lock of the run's ``InFlightTable``, or of the
    /// table of a run it follows, and must not capture this priority.
    func whenLowered(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.onLowered = body }
        if current == .low { body() }
    }
}

/// A bounded number of decode slots, handed out by priority.
///
/// Decoding is the heavy step, so the store never runs more decodes at once than it has slots
/// (by default one per active processor): a fast fling or a large prefetch cannot start a thread
/// per image. Waiting runs queue; when a slot frees it goes to the most urgent waiter, first come
/// first served within a priority, so a visible load overtakes queued prefetches. A waiter whose
/// task is cancelled leaves the queue at once and never decodes; a run whose task is cancelled while
/// it decodes raises its ``DecodeCancellation``, which the decoders that work in steps (rows, chunks
/// of a WebP file) poll to stop early.
///
/// A store keeps more sets, ``ImageStore/fetchSlots`` (one per source, ``FetchSlots``), that its visible
/// loads hold from the start of their fetch until they get a decode slot
/// (``slot(priority:tag:isNeeded:endsWhenLowered:afterRelease:)``): they bound the bytes fetched ahead of the decodes.
///
/// The work itself runs on a dispatch queue of its own, not on Swift's cooperative pool: a decode
/// blocks its thread for milliseconds, and the pool has only one thread per core for every task
/// in the process (network callbacks, the caller's own async work) to share.
final class DecodeSlots: Sendable {
    private struct Waiter {
        let id: UInt64
        let priority: RunPriority
        /// What the waiter waits to fetch (a URL's `cacheKey`), for ``dismiss(tag:)``.
        let tag: String?
        let continuation: CheckedContinuation<Grant, Never>
    }

    /// What a wait for a slot came to.
    private enum Grant {
        case granted
        /// The task was cancelled before it got a slot.
        case cancelled
        /// What it waited to fetch arrived meanwhile (``dismiss(tag:)``).
        case notNeeded
    }

    /// A wait for a slot that is held across awaits (``slot(priority:tag:isNeeded:endsWhenLowered:afterRelease:)``).
    enum Held: Sendable {
        /// The slot, with the closure that gives it back, which does so once however often it is called.
        case slot(@Sendable () -> Void)
        /// The task was cancelled before it got a slot.
        case cancelled
        /// What the work was to fetch arrived before a slot was free: it goes on without one.
        case notNeeded
    }

    private struct State {
        var busy = 0
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    let limit: Int
    private let state = LockedBox(State())
    private let queue = DispatchQueue(label: "AsyncImageCache.decode", qos: .userInitiated, attributes: .concurrent)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `body` in a slot on the decode queue, waiting for a slot first. Returns `nil` without
    /// running `body` when the task is cancelled before it gets a slot; cancelled while `body` runs,
    /// it raises `cancellation` for `body` to see, and still waits for `body` to return (the slot is
    /// busy until the decode has stopped).
    func run<Result: Sendable>(
        priority: RunPriority, cancellation: DecodeCancellation? = nil, _ body: @escaping @Sendable () -> Result
    ) async -> Result? {
        guard await acquire(priority) == .granted else { return nil }
        defer { release() }
        guard !Task.isCancelled else { return nil }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async { continuation.resume(returning: body()) }
            }
        } onCancel: {
            cancellation?.cancel()
        }
    }

    /// Waits for a slot, as ``run(priority:cancellation:_:)`` does, for work that holds it across awaits
    /// (a load between the start of its fetch and its decode). A waiter tagged with what it is to fetch
    /// stops waiting, without a slot, once ``dismiss(tag:)`` says it arrived, or when `isNeeded` says so
    /// as it starts to wait (read under the lock `dismiss(tag:)` takes, so that it misses no arrival).
    /// `afterRelease` runs once, right after the slot is given back.
    ///
    /// With `endsWhenLowered`, the wait also ends without a slot, `notNeeded`, once only prefetches want the
    /// run (its priority lowered): a visible load's run whose loads left while it waited to fetch fetches as
    /// a prefetch does, without one, rather than queue behind every visible load of its source.
    func slot(
        priority: RunPriority, tag: String? = nil, isNeeded: (@Sendable () -> Bool)? = nil,
        endsWhenLowered: Bool = false, afterRelease: @escaping @Sendable () -> Void = {}
    ) async -> Held {
        switch await acquire(priority, tag: tag, isNeeded: isNeeded, endsWhenLowered: endsWhenLowered) {
        case .cancelled: return .cancelled
        case .notNeeded: return .notNeeded
        case .granted: break
        }
        let isReleased = LockedBox(false)
        return .slot { [self] in
            let first = isReleased.withLock { released -> Bool in
                defer { released = true }
                return !released
            }
            guard first else { return }
            release()
            afterRelease()
        }
    }

    /// Lets the waiters tagged `tag` go without a slot: what they wait to fetch has arrived (the bytes
    /// of another width's fetch, or a prefetch's). Call once it can be seen by their `isNeeded`.
    func dismiss(tag: String) {
        let dismissed = state.withLock { state -> [Waiter] in
            let matching = state.waiters.filter { $0.tag == tag }
            if !matching.isEmpty { state.waiters.removeAll { $0.tag == tag } }
            return matching
        }
        for waiter in dismissed { waiter.continuation.resume(returning: .notNeeded) }
    }

    /// The decodes running now (for tests and diagnostics).
    var busyCount: Int { state.withLock { $0.busy } }

    /// The runs waiting for a slot (for tests and diagnostics).
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    private func acquire(
        _ priority: RunPriority, tag: String? = nil, isNeeded: (@Sendable () -> Bool)? = nil,
        endsWhenLowered: Bool = false
    ) async -> Grant {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let granted = state.withLock { state -> Grant? in
                    // Checked under the lock: `leave` runs after the flag is set and takes the lock,
                    // so a cancelled waiter is either refused here or removed there.
                    if Task.isCancelled { return .cancelled }
                    if state.busy < limit {
                        state.busy += 1
                        return .granted
                    }
                    // Likewise, what arrives before `dismiss(tag:)` takes the lock is seen here.
                    if let isNeeded, !isNeeded() { return .notNeeded }
                    state.waiters.append(Waiter(id: id, priority: priority, tag: tag, continuation: continuation))
                    return nil
                }
                if let granted {
                    continuation.resume(returning: granted)
                } else if endsWhenLowered {
                    // Once queued: run at once when the priority is low already. Replaced by the run's own handler
                    // once the wait ends; called after that, it finds no waiter of this id.
                    priority.whenLowered { [weak self] in self?.leave(id, as: .notNeeded) }
                }
            }
        } onCancel: {
            leave(id, as: .cancelled)
        }
    }

    /// Ends waiter `id`'s wait with `grant` (cancelled, or let go without a slot), if it still waits.
    private func leave(_ id: UInt64, as grant: Grant) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(returning: grant)
    }

    private func release() {
        let next = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.busy -= 1
                return nil
            }
            // The slot passes straight to the most urgent waiter; `busy` stays the same.
            var best = 0
            for index in state.waiters.indices.dropFirst()
            where state.waiters[index].priority.current > state.waiters[best].priority.current {
                best = index
            }
            return state.waiters.remove(at: best)
        }
        next?.continuation.resume(returning: .granted)
    }
}
