import Foundation

/// A visible run's slot of ``ImageStore/fetchSlots``, held from the start of its fetch until it gets a
/// decode slot, which moves with the download when a redirect leads it to another host.
///
/// The run takes a slot of its URL's source before it fetches. When its download follows a redirect to
/// another host, ``HTTPTaskTable`` asks ``move(to:proceed:)`` before it sends the request there: the slot
/// of the host left is given back at once, and the request waits until the run holds one of the new
/// host's slots. So each host's slots bound the bytes fetched from it, whoever redirected to it, and the
/// loads a host serves itself do not wait behind its loads stuck at a host it redirects to.
///
/// ``giveBack()`` gives back whichever slot the run holds then, once: as the run gets its decode slot, as
/// only prefetches still want it (a wait for a new host's slot ends then, and the download goes on
/// without one, as a prefetch's does), or as it ends. A move after it waits for nothing. The download the
/// run starts keeps the slot past that while it goes on for a visible run (``keep(whileDownloadingAt:)``):
/// a row of another width still showing when the row that started the download scrolls away.
final class FetchSlotHold: Sendable {
    private struct State {
        /// The source of the slot held or waited for (``FetchSlots/source(of:)``).
        var source: String
        /// Gives back the slot held now; `nil` while a move waits for one, and once given back.
        var release: (@Sendable () -> Void)?
        /// The wait of the latest move for its slot, until it ends.
        var wait: Task<Void, Never>?
        /// The number of moves so far: the id of the latest.
        var moves = 0
        /// The id of the latest move whose download ended while it waited.
        var stoppedMove = 0
        /// Set by ``giveBack()``: the run no longer needs the slot.
        var isLetGoByRun = false
        /// The priority of the download the run started, while it goes on (``keep(whileDownloadingAt:)``).
        var download: RunPriority?
        /// Set once the slot is given back for good: neither the run nor its download wants it.
        var isGivenBack = false

        /// Whether the slot is to be given back now: the run has let it go, and no visible run waits for
        /// its download. Reads the download's priority, under that priority's own lock.
        var isUnwanted: Bool { !isGivenBack && isLetGoByRun && download?.current != .normal }
    }

    private let slots: FetchSlots
    /// The URL the run fetches: its bytes arriving meanwhile end a wait, as they do the first.
    private let url: URL
    private let priority: RunPriority
    private let isNeeded: @Sendable () -> Bool
    private let state: LockedBox<State>

    /// The hold of a slot of `url`'s source (or of `source`, ``FetchSlots/diskSource``) that `release` gives
    /// back, taken from `slots` at `priority`.
    init(
        _ release: @escaping @Sendable () -> Void, of url: URL, source: String? = nil, in slots: FetchSlots,
        priority: RunPriority, isNeeded: @escaping @Sendable () -> Bool
    ) {
        self.slots = slots
        self.url = url
        self.priority = priority
        self.isNeeded = isNeeded
        state = LockedBox(State(source: source ?? FetchSlots.source(of: url), release: release))
    }

    /// Lets the slot go for the run: gives back the slot held now, if any, and ends a move's wait for one,
    /// so the download goes on without a slot; unless the download the run started still goes on for a
    /// visible run, which keeps it (``keep(whileDownloadingAt:)``). Once given back, later calls and later
    /// moves do nothing.
    func giveBack() {
        update { $0.isLetGoByRun = true }
    }

    /// Keeps the slot for the download the run starts, whose fetch run's priority is `download`, for as
    /// long as it goes on and a visible run waits for it, also once the run itself gives the slot back. The
    /// runs of other widths that joined the download gave their own slots back as they joined (see
    /// ``ImageStore``'s `original(for:)`): without this, once the run that started it is cancelled, its
    /// bytes, and the hosts its redirects lead to, would count under no slot. Returns what to call as the
    /// download ends. Does nothing once the slot is given back.
    func keep(whileDownloadingAt download: RunPriority) -> @Sendable () -> Void {
        let kept = state.withLock { state -> Bool in
            guard !state.isGivenBack else { return false }
            state.download = download
            return true
        }
        guard kept else { return {} }
        // Once only prefetches wait for the download, it is a prefetch's, which takes no slot. Weakly: the
        // download's priority keeps the handler.
        download.whenLowered { [weak self] in self?.update { _ in } }
        return { [self] in update { $0.download = nil } }
    }

    /// Applies `change`, then gives back the slot held, and ends a move's wait for one, if it is unwanted now.
    private func update(_ change: (inout State) -> Void) {
        let (release, wait) = state.withLock { state -> ((@Sendable () -> Void)?, Task<Void, Never>?) in
            change(&state)
            guard state.isUnwanted else { return (nil, nil) }
            defer { (state.release, state.wait, state.isGivenBack) = (nil, nil, true) }
            return (state.release, state.wait)
        }
        wait?.cancel()
        release?()
    }

    /// Moves the hold to `target`'s source, where a redirect leads the download: gives back the slot held
    /// and calls `proceed` once one of the target's is held, or once the wait ends without one (given
    /// back meanwhile, or the URL's bytes arrived); at once for a target of the same source, or once the
    /// hold is given back. Returns what to call when the download ends before `proceed` is: it ends the
    /// wait, `proceed` is never called, and a slot the move got is given back.
    func move(to target: URL, proceed: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let source = FetchSlots.source(of: target)
        let started = state.withLock { state -> (id: Int, left: (@Sendable () -> Void)?, priority: RunPriority)? in
            guard !state.isGivenBack, state.source != source else { return nil }
            defer { (state.source, state.release, state.moves) = (source, nil, state.moves + 1) }
            // A download kept for the runs of other widths waits at their priority: the run that started it
            // may be a prefetch by now, and would queue it behind every visible load of the target.
            return (state.moves + 1, state.release, state.download ?? priority)
        }
        guard let (id, left, priority) = started else {
            proceed()
            return {}
        }
        left?()
        let (slots, url, isNeeded) = (slots, url, isNeeded)
        let wait = Task { [state] in
            let held = await slots.slot(for: url, at: target, priority: priority, isNeeded: isNeeded)
            let (surplus, goesOn) = state.withLock { state -> ((@Sendable () -> Void)?, Bool) in
                let isStopped = state.stoppedMove == id
                if state.moves == id { state.wait = nil }
                if case .slot(let release) = held, !isStopped, !state.isGivenBack {
                    state.release = release
                    return (nil, true)
                }
                return (held.release, !isStopped)
            }
            surplus?()
            if goesOn { proceed() }
        }
        let ended = state.withLock { state -> Bool in
            guard !state.isGivenBack, state.stoppedMove != id else { return true }
            state.wait = wait
            return false
        }
        if ended { wait.cancel() }
        return { [state] in
            let (release, wait) = state.withLock { state -> ((@Sendable () -> Void)?, Task<Void, Never>?) in
                guard state.moves == id else { return (nil, nil) }
                defer { (state.stoppedMove, state.release, state.wait) = (id, nil, nil) }
                return (state.release, state.wait)
            }
            wait?.cancel()
            release?()
        }
    }
}

extension DecodeSlots.Held {
    /// The closure that gives back the slot; `nil` when there is none.
    var release: (@Sendable () -> Void)? {
        if case .slot(let release) = self { release } else { nil }
    }
}
