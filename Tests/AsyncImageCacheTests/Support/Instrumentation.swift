import Foundation

@_spi(Tools) @testable import AsyncImageCache

/// A file inspector that counts the `stat` calls the store makes, and hands them to the real one.
final class FileInspectorSpy: FileInspecting, @unchecked Sendable {
    // `calls` is only touched while holding `lock`.
    private let lock = NSLock()
    private var calls = 0
    private let base = SystemFileInspector()

    var count: Int { lock.withLock { calls } }

    func stamp(ofFileAt path: FileSystemPath) -> FileStamp? {
        lock.withLock { calls += 1 }
        return base.stamp(ofFileAt: path)
    }
}

/// A decoder that holds every decode at a gate until the test opens it, and records how many
/// decodes run at once and what they were told. Instrumentation for scheduling tests: the decoding
/// itself is the real one.
final class GatedDecoder: ImageDecoding, @unchecked Sendable {
    // Every stored `var` is only touched while holding `condition`.
    private let condition = NSCondition()
    private var isOpen: Bool
    private var entered = 0
    private var running = 0
    private var mostRunning = 0
    private var contexts: [ImageDecodingContext] = []
    private var cancellations: [Bool] = []
    private let failsWhenCancelled: Bool
    private let heldBytes: Data?
    private let base: any ImageDecoding

    /// - Parameters:
    ///   - failsWhenCancelled: Whether a decode whose load was cancelled by the time it passes the
    ///     gate throws, as a careless decoder might, `.corrupt` rather than `.cancelled`.
    ///   - bytes: When given, only decodes of these bytes are held (and counted); others decode at once.
    ///   - base: The decoder that decodes past the gate: the default decoders, or another gate.
    init(
        open: Bool = false, failsWhenCancelled: Bool = false, holdingOnly bytes: Data? = nil,
        base: any ImageDecoding = ImageDecoders.Default()
    ) {
        isOpen = open
        self.failsWhenCancelled = failsWhenCancelled
        heldBytes = bytes
        self.base = base
    }

    /// Decodes that have started.
    var enteredCount: Int { condition.withLock { entered } }
    /// The most decodes that ran at the same time.
    var peakConcurrency: Int { condition.withLock { mostRunning } }
    /// The context of the last decode that started.
    var lastContext: ImageDecodingContext? { condition.withLock { contexts.last } }
    /// Whether each decode past the gate, in order, found its load cancelled.
    var cancellationsSeen: [Bool] { condition.withLock { cancellations } }

    func open() {
        condition.withLock {
            isOpen = true
            condition.broadcast()
        }
    }

    func close() {
        condition.withLock { isOpen = false }
    }

    func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
        if let heldBytes, data != heldBytes { return try base.decode(data, context: context) }
        let cancelled = condition.withLock {
            entered += 1
            running += 1
            mostRunning = max(mostRunning, running)
            contexts.append(context)
            while !isOpen { condition.wait() }
            cancellations.append(context.isCancelled)
            return context.isCancelled
        }
        defer { condition.withLock { running -= 1 } }
        if failsWhenCancelled && cancelled {
            throw ImageDecodingError(format: context.header.format, reason: .corrupt("gave up"))
        }
        return try base.decode(data, context: context)
    }
}

/// The order in which the store started each stage, by URL.
final class StageLog: @unchecked Sendable {
    // `events` is only touched while holding `lock`.
    private let lock = NSLock()
    private var events: [(stage: ImageStore.Stage, url: URL, time: ContinuousClock.Instant)] = []

    var observer: @Sendable (ImageStore.Stage, URL) -> Void {
        { [self] stage, url in
            let now = ContinuousClock.now
            lock.withLock { events.append((stage, url, now)) }
        }
    }

    /// The URLs whose `stage` started, in order.
    func urls(of stage: ImageStore.Stage) -> [URL] {
        lock.withLock { events.filter { $0.stage == stage }.map(\.url) }
    }

    /// When each URL's `stage` started.
    func times(of stage: ImageStore.Stage) -> [(url: URL, time: ContinuousClock.Instant)] {
        lock.withLock { events.filter { $0.stage == stage }.map { ($0.url, $0.time) } }
    }
}

/// Runs `body` on a thread of its own and returns its result: for a synchronous call that a test parks at a
/// gate. Parked on Swift's cooperative pool, it would hold one of the pool's threads (as many as the
/// machine has cores, two here) until the gate opens; with a load parked at another gate by another
/// test, nothing would be left to run the code that opens them.
func onOwnThread<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// Once armed, holds the next caller of ``parkIfArmed()`` (on its own thread) until ``open()``: the
/// waiting part of the gates that park a load at one point while a test does something else.
final class ParkingGate: @unchecked Sendable {
    // Every stored `var` is only touched while holding `condition`.
    private let condition = NSCondition()
    private var isArmed = false
    private var isOpen = false
    private var parked = 0

    /// Callers held at the gate so far.
    var parkedCount: Int { condition.withLock { parked } }

    /// Holds the next caller.
    func arm() {
        condition.withLock { isArmed = true }
    }

    /// Lets every held caller go, and every later one through.
    func open() {
        condition.withLock {
            isOpen = true
            condition.broadcast()
        }
    }

    /// Waits here until ``open()`` when the gate is armed (disarming it), else returns at once.
    func parkIfArmed() {
        condition.withLock {
            guard isArmed else { return }
            isArmed = false
            parked += 1
            condition.broadcast()
            while !isOpen { condition.wait() }
        }
    }
}

/// ``ParkingGate`` for an async hook: the caller it holds is suspended, not blocked, so that a run held
/// there keeps no thread of the cooperative pool (two on a two-core machine, shared by every test running).
final class SuspendingGate: Sendable {
    private struct State {
        var isArmed = false
        var isOpen = false
        var parked = 0
        var held: [CheckedContinuation<Void, Never>] = []
    }
    private let state = LockedBox(State())

    /// Callers held at the gate so far.
    var parkedCount: Int { state.withLock { $0.parked } }

    /// Holds the next caller.
    func arm() {
        state.withLock { $0.isArmed = true }
    }

    /// Lets every held caller go, and every later one through.
    func open() {
        let held = state.withLock { state in
            state.isOpen = true
            defer { state.held = [] }
            return state.held
        }
        for caller in held { caller.resume() }
    }

    /// Suspends here until ``open()`` when the gate is armed (disarming it), else returns at once.
    func parkIfArmed() async {
        await withCheckedContinuation { (caller: CheckedContinuation<Void, Never>) in
            let holds = state.withLock { state in
                guard state.isArmed else { return false }
                state.isArmed = false
                state.parked += 1
                guard !state.isOpen else { return false }
                state.held.append(caller)
                return true
            }
            if !holds { caller.resume() }
        }
    }
}

/// A stage observer that, once armed, holds the next start of `stage` (on the thread that runs it)
/// until the test opens the gate: parks a load at that stage while something else happens.
final class StageGate: Sendable {
    private let stage: ImageStore.Stage
    private let gate = ParkingGate()

    init(_ stage: ImageStore.Stage) {
        self.stage = stage
    }

    /// Starts of the stage held at the gate so far.
    var parkedCount: Int { gate.parkedCount }

    var observer: @Sendable (ImageStore.Stage, URL) -> Void {
        { [self] stage, _ in
            guard stage == self.stage else { return }
            gate.parkIfArmed()
        }
    }

    /// Holds the next start of the stage.
    func arm() {
        gate.arm()
    }

    func open() {
        gate.open()
    }
}

/// A row observer (``ImageStore/Configuration/decodeRowObserver``) that records how far decodes went
/// and, once armed, holds the next decode that has decoded some but not all of its rows, on its
/// decoding thread, until the test opens the gate: parks a decode in the middle of its rows.
final class RowGate: @unchecked Sendable {
    // Every stored `var` is only touched while holding `condition`.
    private let condition = NSCondition()
    private var isArmed = false
    private var isOpen = false
    private var parked = 0
    private var mostRows = 0
    private var total = 0

    /// Decodes held at the gate so far.
    var parkedCount: Int { condition.withLock { parked } }
    /// The most source rows any decode reported, and its rows in all.
    var rowsDecoded: (most: Int, total: Int) { condition.withLock { (mostRows, total) } }

    var observer: @Sendable (Int, Int) -> Void {
        { [self] rows, totalRows in
            condition.withLock {
                mostRows = max(mostRows, rows)
                total = totalRows
                guard isArmed, rows < totalRows else { return }
                isArmed = false
                parked += 1
                condition.broadcast()
                while !isOpen { condition.wait() }
            }
        }
    }

    /// Holds the next decode part way through its rows, and forgets how far earlier decodes went.
    func arm() {
        condition.withLock {
            isArmed = true
            isOpen = false
            mostRows = 0
            total = 0
        }
    }

    func open() {
        condition.withLock {
            isOpen = true
            condition.broadcast()
        }
    }
}
