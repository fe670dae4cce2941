import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `aic demo` undoes when Ctrl-C (`SIGINT`), `SIGTERM` or a closed terminal (`SIGHUP`) ends it: the
/// relaunched child is ended and waited for, a contact sheet being written is finished, the temporary folder
/// is removed (unless `--keep`), then aic ends by the same signal, so its caller sees the status it would have
/// seen without the handler (130, 143 or 129 in a shell).
///
/// Ended by the signal's default action, the demo left its folder (the sample set's cache, close to a
/// megabyte) in the temporary directory for good, and a relaunched child that the signal did not reach
/// (a `SIGTERM` sent to aic alone, by `timeout` or a supervisor) ran on after it.
///
/// `aic thumbnail` and `aic sheet` use it too, with no folder and no child: a PNG being written is finished
/// (``finishing(_:)``), where Ctrl-C left the temporary file of Foundation's atomic write beside it.
///
/// The handler only writes the signal's number into a pipe (all a signal handler may safely do); a
/// thread of its own reads it and does the work.
final class Interruption: Sendable {
    /// The signals handled: those that end a program that is asked to stop, or whose terminal closed
    /// (ignored ones stay ignored: `nohup aic demo` keeps running when its terminal closes).
    static let signals = [SIGINT, SIGTERM, SIGHUP]

    /// The write end of the pipe the handler writes into, set once before any handler is installed.
    nonisolated(unsafe) private static var pipeWriting: Int32 = -1
    /// Whether a signal has arrived: the interrupted work may fail meanwhile (its child ended under it),
    /// and that failure is no failure to report.
    private static let arrived = LockedCounter()
    /// The relaunched child, if any.
    private let child = ChildState()
    /// Work to finish before the folder goes and aic ends: the contact sheet's write.
    private let unfinished = UnfinishedWork()

    /// Whether a handled signal has arrived: aic is ending by it, and reports nothing else.
    static var isInProgress: Bool { arrived.value > 0 }

    /// Handles ``signals`` from now on, ending the recorded child and removing `folder` (when not `nil`)
    /// before aic ends. Call once, in the command that runs.
    init(removing folder: URL?) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }  // no handler: the signals end aic as before
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        Self.pipeWriting = ends[1]
        let reading = ends[0]
        let thread = Thread { [child, unfinished] in
            var number: UInt8 = 0
            while read(reading, &number, 1) != 1 {}
            Self.arrived.increment()
            if let pid = child.endingChild() {
                kill(pid, SIGTERM)
                // Waited for without being reaped: the thread that started it reaps it.
                var info = siginfo_t()
                _ = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
            }
            unfinished.waitUntilDone()
            // Tried again while anything is left: the demo's own removal may run at the same time (its pass
            // failed as the child was ended), and a removal that finds a file gone stops where it is.
            if let folder {
                for _ in 0..<10 where FileManager.default.fileExists(atPath: folder.path) {
                    try? FileManager.default.removeItem(at: folder)
                }
            }
            let received = Int32(number)
            signal(received, SIG_DFL)
            // Sent to this thread, which must not block it (a thread inherits the mask of the thread that
            // made it): sent to the process, it could reach another thread only after the `_exit` below.
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            sigaddset(&unblocked, received)
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            raise(received)
            _exit(128 + received)  // not reached: the signal's default action has ended aic
        }
        thread.start()
        for signal in Self.signals where !Self.isIgnored(signal) {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(Interruption.pipeWriting, &byte, 1)
            }
            #else
            action.__sigaction_u.__sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(Interruption.pipeWriting, &byte, 1)
            }
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signal, &action, nil)
        }
    }

    /// Whether `signal` is ignored, as a shell without job control leaves `SIGINT` for a job it starts in
    /// the background: such a job must not be ended by the Ctrl-C meant for the one in the foreground.
    private static func isIgnored(_ signal: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(signal, nil, &current) == 0 else { return false }
        #if canImport(Glibc)
        let handler = current.__sigaction_handler.sa_handler
        #else
        let handler = current.__sigaction_u.__sa_handler
        #endif
        return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }

    /// Records that a child that an interruption must end is being started: until ``childStarted(_:)``
    /// or ``childEnded()``, an interruption waits to learn its id (it may run already). Throws, starting
    /// nothing, once an interruption has begun: it found no child to end, and one started now would run on
    /// after aic, in the folder it removes.
    func childStarting() throws(CommandFailure) {
        guard child.start() else { throw CommandFailure("interrupted") }
    }

    /// Records the id of the child being started.
    func childStarted(_ pid: pid_t) {
        child.set(.running(pid))
    }

    /// Records that the child has been waited for, or could not start.
    func childEnded() {
        child.set(.none)
    }

    /// Runs `work` to its end before an interruption removes the folder and ends aic; throws, running
    /// nothing, once an interruption has begun. For a PNG's write (the demo's sheet, a thumbnail, a sheet):
    /// ended in the middle, Foundation's atomic write left its temporary file (`.dat.nosync...`, the whole
    /// PNG) beside it.
    func finishing<Result>(_ work: () throws -> Result) throws -> Result {
        guard unfinished.begin() else { throw CommandFailure("interrupted") }
        defer { unfinished.end() }
        return try work()
    }
}

/// Work an interruption lets finish, safe to begin and end from any thread.
private final class UnfinishedWork: @unchecked Sendable {
    // `count` and `isEnding` are only touched while holding `condition`.
    private let condition = NSCondition()
    private var count = 0
    /// Set once an interruption waits: no work begins after that.
    private var isEnding = false

    /// Records that work begins; `false`, recording nothing, once an interruption has begun.
    func begin() -> Bool {
        condition.withLock {
            guard !isEnding else { return false }
            count += 1
            return true
        }
    }

    /// Records that work begun with ``begin()`` has ended.
    func end() {
        condition.withLock {
            count -= 1
            condition.broadcast()
        }
    }

    /// Waits until no work is in progress; none begins from then on.
    func waitUntilDone() {
        condition.withLock {
            isEnding = true
            while count > 0 { condition.wait() }
        }
    }
}

/// The child an interruption must end, safe to read and set from any thread.
private final class ChildState: @unchecked Sendable {
    enum State {
        case none, starting, running(pid_t)
    }

    // `state` and `isEnding` are only touched while holding `condition`.
    private let condition = NSCondition()
    private var state = State.none
    /// Set once an interruption has looked for the child: no child starts after that.
    private var isEnding = false

    func set(_ newState: State) {
        condition.withLock {
            state = newState
            condition.broadcast()
        }
    }

    /// Records that a child is being started; `false`, recording nothing, once an interruption has begun.
    func start() -> Bool {
        condition.withLock {
            guard !isEnding else { return false }
            state = .starting
            return true
        }
    }

    /// The child's id, or `nil` when none runs, for an interruption that ends it; waits while one is being
    /// started. No child starts from then on (``start()``).
    func endingChild() -> pid_t? {
        condition.withLock {
            isEnding = true
            while case .starting = state { condition.wait() }
            guard case .running(let pid) = state else { return nil }
            return pid
        }
    }
}
