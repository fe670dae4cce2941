/// One keyed table of in-flight work: callers asking for the same key while its work runs wait for
/// that one run instead of starting another.
///
/// A run is cancelled as soon as its last waiter leaves (its task is cancelled), so a fast fling
/// does not leave work running for rows already gone. A waiter that leaves gets
/// ``ImageLoadingError/cancelled`` at once; the others keep waiting. A finished run is removed from
/// the table, so a later call starts fresh (results are cached elsewhere, errors are not cached).
///
/// A run's task starts at its first waiter's task priority (a prefetch's at `.utility`). A waiter of
/// a higher task priority that joins escalates it, and so does a waiter's own escalation while it
/// waits: a prefetch a visible load joins, and the download that prefetch waits for, go on at the
/// visible load's priority instead of queuing their steps behind it on Swift's pool. Escalation
/// cannot be undone, so a run stays raised when that waiter leaves; its ``RunPriority`` falls back,
/// and decode slots and connections go by that.
final class InFlightTable<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Outcome = Result<Value, ImageLoadingError>
    /// The work of a run; it reads the run's priority, which rises when a more urgent waiter joins.
    typealias Work = @Sendable (RunPriority) async -> Outcome

    private struct Waiter {
        let continuation: CheckedContinuation<Outcome, Never>
        let priority: ImageLoadPriority
        /// The priority of the caller's own run, which stands for `priority` from the time it joins.
        let following: RunPriority?
    }

    private final class Run: @unchecked Sendable {
        // `waiters`, `holds` and `task` are only touched while holding the table's lock.
        var waiters: [UInt64: Waiter] = [:]
        /// Holds from ``InFlightTable/hold(where:)`` not yet released: while any is left, the run goes on
        /// when its last waiter leaves.
        var holds = 0
        var task: Task<Void, Never>?
        let priority: RunPriority
        /// Given the run's value when it ends with only holds, nobody waiting: the `whenUnclaimed` of the
        /// caller that started it.
        let whenUnclaimed: (@Sendable (Value) -> Void)?
        /// Given the run's value and the number of waiters it goes to, once it has left the table and
        /// before they are resumed: the `whenFinished` of the caller that started it.
        let whenFinished: (@Sendable (Value, _ waiters: Int) -> Void)?

        init(
            priority: ImageLoadPriority, whenUnclaimed: (@Sendable (Value) -> Void)? = nil,
            whenFinished: (@Sendable (Value, _ waiters: Int) -> Void)? = nil
        ) {
            self.priority = RunPriority(priority)
            self.whenUnclaimed = whenUnclaimed
            self.whenFinished = whenFinished
        }
    }

    private struct State {
        var runs: [Key: Run] = [:]
        var nextWaiterID: UInt64 = 0
    }

    private let state = LockedBox(State())

    /// The number of runs in flight (for tests and diagnostics).
    var count: Int { state.withLock { $0.runs.count } }

    /// Whether a run for `key` is in flight (it may end right after).
    func contains(_ key: Key) -> Bool {
        state.withLock { $0.runs[key] != nil }
    }

    /// Waits for the run for `key`, starting one with `work` when none is in flight.
    ///
    /// - Parameters:
    ///   - priority: How urgently this caller wants the value; a run takes the highest priority of its
    ///     waiters.
    ///   - following: The priority of the caller's own run, when it has one that may change later (a
    ///     prefetch a visible load joins, then leaves): the run it waits for here counts this caller at
    ///     that priority as it is whenever read, instead of at `priority`.
    ///   - joinsRunning: Called, outside the lock, when this caller joins a run already in flight rather
    ///     than starting one; `nil` by default.
    ///   - whenUnclaimed: When this caller starts the run, called with its value if it ends with nobody
    ///     waiting for it, only the holds of ``hold(where:)`` (a load that took it over, and has not joined
    ///     it yet): outside the lock, while the run is still in flight, so that a caller coming meanwhile
    ///     either joins the run or finds what this keeps; `nil` by default.
    ///   - whenFinished: When this caller starts the run, called with its value and the number of waiters
    ///     it goes to (none, when every waiter left), outside the lock, once the run has left the table and
    ///     before the waiters are resumed: a caller coming meanwhile starts a run of its own, so what the
    ///     waiters will record of the value is recorded here for them, before they run; `nil` by default.
    func value(
        for key: Key, priority: ImageLoadPriority = .normal, following: RunPriority? = nil,
        joinsRunning: (@Sendable () -> Void)? = nil, whenUnclaimed: (@Sendable (Value) -> Void)? = nil,
        whenFinished: (@Sendable (Value, _ waiters: Int) -> Void)? = nil, work: @escaping Work
    ) async -> Outcome {
        let waiterID = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        @Sendable func wait() async -> Outcome {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    join(
                        key, waiterID: waiterID, continuation: continuation, priority: priority,
                        following: following, joinsRunning: joinsRunning, whenUnclaimed: whenUnclaimed,
                        whenFinished: whenFinished, work: work)
                }
            } onCancel: {
                leave(key, waiterID: waiterID)
            }
        }
        guard #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) else { return await wait() }
        return await withTaskPriorityEscalationHandler {
            await wait()
        } onPriorityEscalated: { [self] _, raised in
            escalate(key, waiterID: waiterID, to: raised)
        }
    }

    /// Escalates the task of the run that waiter `waiterID` waits in to `priority`, the waiter's own
    /// task priority now that it was escalated.
    private func escalate(_ key: Key, waiterID: UInt64, to priority: TaskPriority) {
        let task = state.withLock { state in
            state.runs[key].flatMap { $0.waiters[waiterID] == nil ? nil : $0.task }
        }
        // Outside the lock: escalating runs the handlers of the task's own waits, which may escalate
        // the runs that it waits for in turn.
        task.map { Self.escalate($0, to: priority) }
    }

    /// Escalates `task` to `priority`, where the platform can; a task already at least as high is left.
    private static func escalate(_ task: Task<Void, Never>, to priority: TaskPriority) {
        guard #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) else { return }
        task.escalatePriority(to: priority)
    }

    private func join(
        _ key: Key, waiterID: UInt64, continuation: CheckedContinuation<Outcome, Never>,
        priority: ImageLoadPriority, following: RunPriority?, joinsRunning: (@Sendable () -> Void)?,
        whenUnclaimed: (@Sendable (Value) -> Void)?, whenFinished: (@Sendable (Value, _ waiters: Int) -> Void)?,
        work: @escaping Work
    ) {
        // Checked under the lock: cancellation sets the flag before `leave` takes the lock, so a
        // waiter is either refused here or found by `leave`, never lost between the two.
        let joined = state.withLock { state -> (joined: Bool, existing: Bool, running: Task<Void, Never>?) in
            if Task.isCancelled { return (false, false, nil) }
            let waiter = Waiter(continuation: continuation, priority: priority, following: following)
            let existing = state.runs[key]
            let run = existing ?? Run(priority: .low, whenUnclaimed: whenUnclaimed, whenFinished: whenFinished)
            run.waiters[waiterID] = waiter
            // A run followed is counted as it is when read: `priority` was only its value now, and
            // counted as well it would keep the run up after a visible load left the caller's run.
            if let following { run.priority.follow(following) } else { run.priority.raise(to: priority) }
            guard existing == nil else { return (true, true, run.task) }
            state.runs[key] = run
            run.task = Task(priority: priority == .low ? .utility : nil) { [self] in
                let outcome = await work(run.priority)
                finish(key, run: run, outcome: outcome)
            }
            return (true, false, nil)
        }
        if !joined.joined { continuation.resume(returning: .failure(.cancelled)) }
        if joined.existing { joinsRunning?() }
        // A run begun by a less urgent task (a prefetch) goes on at this caller's priority.
        if let running = joined.running { Self.escalate(running, to: Task.currentPriority) }
    }

    private func leave(_ key: Key, waiterID: UInt64) {
        let (continuation, unwanted) = state.withLock {
            state -> (CheckedContinuation<Outcome, Never>?, Task<Void, Never>?) in
            guard let run = state.runs[key], let waiter = run.waiters.removeValue(forKey: waiterID) else {
                return (nil, nil)
            }
            if let following = waiter.following { run.priority.stopFollowing(following) }
            var unwanted: Task<Void, Never>?
            if run.waiters.isEmpty {
                unwanted = Self.removeIfUnwanted(run, key, &state)
            } else {
                // The waiter that raised the run may have gone: a prefetch a passing row joined queues as
                // a prefetch again, behind the visible loads. The runs followed count as they are.
                run.priority.set(to: Self.ownPriority(of: run))
            }
            return (waiter.continuation, unwanted)
        }
        // Outside the lock: see ``removeIfUnwanted(_:_:_:)``.
        unwanted?.cancel()
        continuation?.resume(returning: .failure(.cancelled))
    }

    /// Keeps the runs in flight whose keys `matches` accepts from being cancelled when their last waiter
    /// leaves, until the returned closure is called (once): a load that replaces another hands the work
    /// they share over instead of stopping it; meanwhile each counts as a visible waiter of the run. `nil`
    /// when no such run is in flight. A run that ends while held, before the load it is held for joins it,
    /// hands its value to the `whenUnclaimed` of the caller that started it. Looks at every run in flight:
    /// for the few a replacing load may share.
    func hold(where matches: (Key) -> Bool) -> (@Sendable () -> Void)? {
        let held = state.withLock { state -> [(Key, Run)] in
            state.runs.filter { matches($0.key) }.map { key, run in
                run.holds += 1
                // The hold stands for the visible load that takes the run over: until it joins, the run
                // stays visible, and a download keeps its fetch slot for it (``FetchSlotHold``).
                run.priority.raise(to: .normal)
                return (key, run)
            }
        }
        guard !held.isEmpty else { return nil }
        return { [self] in
            for (key, run) in held { release(key, run: run) }
        }
    }

    private func release(_ key: Key, run: Run) {
        let unwanted = state.withLock { state -> Task<Void, Never>? in
            run.holds -= 1
            // No waiter came: the run is cancelled as its last waiter's leaving would have done.
            let unwanted = Self.removeIfUnwanted(run, key, &state)
            // Else it falls back to its waiters' priority, as when a waiter leaves: the hold raised it.
            if run.holds == 0, state.runs[key] === run { run.priority.set(to: Self.ownPriority(of: run)) }
            return unwanted
        }
        unwanted?.cancel()
    }

    /// The priority of `run`'s waiters that are not runs, and of its holds, which stand for visible loads.
    /// Call with the lock held.
    private static func ownPriority(of run: Run) -> ImageLoadPriority {
        let waiters = run.waiters.values.filter { $0.following == nil }.map(\.priority).max() ?? .low
        return run.holds > 0 ? .normal : waiters
    }

    /// Removes `run`, still the one in flight for `key`, once nobody waits for it or holds it, and returns
    /// its task, for the caller to cancel once the lock is free. Cancelling runs the cancellation handlers
    /// of the task's waits at once, on the cancelling thread: those of the runs it waits for, which take
    /// their tables' locks, and those of a custom ``DataLoading``, which may load through this store (the
    /// lock is not reentrant) or block. Out of the table, the run gains no waiter meanwhile.
    private static func removeIfUnwanted(_ run: Run, _ key: Key, _ state: inout State) -> Task<Void, Never>? {
        guard run.waiters.isEmpty, run.holds == 0, state.runs[key] === run else { return nil }
        state.runs[key] = nil
        return run.task
    }

    private func finish(_ key: Key, run: Run, outcome: Outcome) {
        // Ending with only holds (a load that took the run over and has not joined it yet): its value goes
        // to `whenUnclaimed` before the run leaves the table, so that the load, joining it or not, gets it.
        if let whenUnclaimed = run.whenUnclaimed, case .success(let value) = outcome,
            state.withLock({ $0.runs[key] === run && run.waiters.isEmpty && run.holds > 0 })
        {
            whenUnclaimed(value)
        }
        let waiters = state.withLock { state -> [CheckedContinuation<Outcome, Never>] in
            if state.runs[key] === run { state.runs[key] = nil }
            defer { run.waiters = [:] }
            return run.waiters.values.map(\.continuation)
        }
        if let whenFinished = run.whenFinished, case .success(let value) = outcome {
            whenFinished(value, waiters.count)
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}

/// The key of an in-flight run of the store: what it works on, with the disk tier's generation and the
/// URL's replacement count read before anything was looked up for it. A load that starts after a
/// `removeAll()`, or after a revalidation replaced the image, reads other counts and so never waits for
/// a run that looked up the old bytes (it would be handed the old image), as it never takes old bytes
/// from ``ImageStore/decodingOriginals`` or ``ImageStore/undecodedOriginals``.
///
/// A local file's run is keyed by the file's version as well, found when the run is asked for: a load
/// made after the file changed never waits for a run that reads or decodes the old version.
struct RunKey<Subject: Hashable & Sendable>: Hashable, Sendable {
    let subject: Subject
    let generation: Int
    let replacement: Int
    /// The local file's version when the run was asked for, a stamp of its own (``FileStamp/unshared()``)
    /// for a file that was not there; `nil` for other URLs.
    var fileVersion: FileStamp? = nil
}

extension InFlightTable {
    /// The number of callers waiting for the runs for `subject`, under any counts (for tests and
    /// diagnostics).
    func waiterCount<Subject>(for subject: Subject) -> Int where Key == RunKey<Subject> {
        state.withLock { state in
            state.runs.reduce(0) { total, run in run.key.subject == subject ? total + run.value.waiters.count : total }
        }
    }
}
