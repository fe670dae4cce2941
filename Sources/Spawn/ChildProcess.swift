import Foundation

/// A child process started with `posix_spawn`, for the tests' helpers (the HTTP test server, aic under
/// test, setpriv, mount) and aic's relaunch in `aic demo`, reaped by ``waitForExit()``,
/// ``terminateAndWait()`` or ``run(_:arguments:started:)``. A target of its own, outside the library's products,
/// so that aic and the tests share it.
///
/// Not Foundation's `Process`: on Linux it learns that a child has exited when a socket it shares with
/// the child closes, and neither that socket nor its pipes are close-on-exec, so a process spawned at
/// the same moment by another test can inherit them. Its parent then waited for as long as that
/// process ran: seen as a test spinning a core in `waitUntilExit()` on a zombie for good, with the
/// `@MainActor` tests whose servers held the socket queued behind it. A child started here gets its
/// own pipes only, close-on-exec in this process, and no blocked signals (a thread of the test pool
/// blocks some, and a child inherits its mask).
package final class ChildProcess: Sendable {
    /// The child's process id.
    package let pid: pid_t

    package struct SpawnError: Error, CustomStringConvertible {
        package var description: String
        /// The code the child exited with when that is what failed (not 0); `nil` when it could not start, its
        /// output could not be read, it could not be waited for, or a signal ended it.
        package var exitCode: Int32? = nil
    }

    /// Starts `arguments[0]`, looked up on `PATH`, with `arguments` as its argument vector, a pipe to its
    /// stdin and one from its stdout; stderr stays the test's own, so a child that fails says why.
    ///
    /// - Returns: The child, the write end of its stdin (it reads end-of-file once this is closed) and
    ///   its stdout.
    package static func start(_ arguments: [String]) throws -> (ChildProcess, input: Int32, output: FileHandle) {
        let (input, output) = (try makePipe(), try makePipe())
        defer {
            close(input.reading)
            close(output.writing)
        }
        do {
            let child = try ChildProcess(arguments, standardInput: input.reading, standardOutput: output.writing)
            return (child, input.writing, FileHandle(fileDescriptor: output.reading, closeOnDealloc: true))
        } catch {
            close(input.writing)
            close(output.reading)
            throw error
        }
    }

    /// Starts the child reading `standardInput` (this process's stdin when `nil`) and writing
    /// `standardOutput`, descriptors of this process duplicated into the child.
    private init(_ arguments: [String], standardInput: Int32?, standardOutput: Int32) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput { posix_spawn_file_actions_adddup2(&actions, standardInput, STDIN_FILENO) }
        posix_spawn_file_actions_adddup2(&actions, standardOutput, STDOUT_FILENO)
        var attributes = Self.defaultSignals()
        defer { posix_spawnattr_destroy(&attributes) }
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = Self.spawning.withLock { posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, environ) }
        guard status == 0 else {
            throw SpawnError(description: "\(arguments[0]): \(String(cString: strerror(status)))")
        }
        self.pid = pid
    }

    /// Runs `executable` (a path, or a name looked up on `PATH`) with `arguments` after it until it exits:
    /// stdin, stderr and the environment are this process's, stdout comes back through a pipe that is
    /// read to its end before the child is waited for, so a child that writes more than a pipe holds
    /// cannot block on a parent that waits for it.
    ///
    /// `started` is called with the child's process id as soon as it runs, before its output is read: for
    /// a caller that must be able to end it (`aic demo` on Ctrl-C).
    ///
    /// - Returns: What the child wrote on stdout.
    /// - Throws: ``SpawnError`` when the child cannot start, when its output cannot be read, or when it
    ///   exits with a code other than 0 or a signal ends it (the error says which, see
    ///   ``termination(of:)``).
    package static func run(
        _ executable: String, arguments: [String], started: (pid_t) -> Void = { _ in }
    ) throws -> Data {
        let output = try makePipe()
        let child: ChildProcess
        do {
            defer { close(output.writing) }
            child = try ChildProcess([executable] + arguments, standardInput: nil, standardOutput: output.writing)
        } catch {
            close(output.reading)
            throw error
        }
        started(child.pid)
        let name = URL(fileURLWithPath: executable).lastPathComponent
        let reading = FileHandle(fileDescriptor: output.reading, closeOnDealloc: true)
        let data: Data
        do {
            data = try reading.readToEnd() ?? Data()
        } catch {
            // Closed first: a child still writing gets EPIPE instead of blocking on a full pipe.
            try? reading.close()
            _ = child.waitForExit()
            throw SpawnError(description: "\(name): reading its output: \(error)")
        }
        guard let status = child.reaped() else {
            throw SpawnError(description: "\(name): waiting for it: \(String(cString: strerror(errno)))")
        }
        guard exitCode(of: status) == 0 else {
            throw SpawnError(description: "\(name) \(termination(of: status))", exitCode: exitCode(of: status))
        }
        return data
    }

    /// Starts `executable` with `arguments` after its own path, `environment` as its whole environment,
    /// `directory` as its working directory, `/dev/null` as stdin and its stdout and stderr written into
    /// the files at `standardOutput` and `standardError` (the same path: one file for both, in the order
    /// written); signals as ``start(_:)`` leaves them.
    ///
    /// For the command-line tests, which start hundreds of children: Foundation's `Process.run()` in Swift
    /// 6.3.1 reads past a `dirent` while it lists `/proc/self/fd` and now and then crashes the whole test
    /// process (SIGSEGV in its memcpy, seen here in `CommandLineRunner`; swiftlang/swift-corelibs-foundation
    /// pull request 5472).
    package convenience init(
        executable: String, arguments: [String], environment: [String: String], directory: String,
        standardOutput: String, standardError: String
    ) throws {
        try self.init(
            executable: executable, argumentBytes: arguments.map { Array($0.utf8) }, environment: environment,
            directory: directory, standardOutput: standardOutput, standardError: standardError)
    }

    /// ``init(executable:arguments:environment:directory:standardOutput:standardError:)`` with each argument
    /// given as bytes, which need not be UTF-8: a file name in Latin-1 (`caf\xE9.jpg`), as Linux allows.
    package init(
        executable: String, argumentBytes: [[UInt8]], environment: [String: String], directory: String,
        standardOutput: String, standardError: String
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, standardOutput, O_WRONLY | O_TRUNC, 0)
        if standardError == standardOutput {
            posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
        } else {
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, standardError, O_WRONLY | O_TRUNC, 0)
        }
        guard let addChdir = Self.addChdir, addChdir(&actions, directory) == 0 else {
            throw SpawnError(description: "posix_spawn_file_actions_addchdir_np is not available")
        }
        // SIGHUP too: aic under test gets a terminal's signals as a shell gives them, whatever the test
        // runner ignores (a CI job started under `nohup`).
        var attributes = Self.defaultSignals(adding: [SIGHUP])
        defer { posix_spawnattr_destroy(&attributes) }
        var argv =
            ([Array(executable.utf8)] + argumentBytes).map { bytes -> UnsafeMutablePointer<CChar>? in
                let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
                for (index, byte) in bytes.enumerated() { copy[index] = CChar(bitPattern: byte) }
                copy[bytes.count] = 0
                return copy
            } + [nil]
        defer { argv.forEach { $0?.deallocate() } }
        var envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let status = Self.spawning.withLock { posix_spawn(&pid, executable, &actions, &attributes, &argv, &envp) }
        guard status == 0 else {
            throw SpawnError(description: "\(executable): \(String(cString: strerror(status)))")
        }
        self.pid = pid
    }

    /// Held while a child is started. A child gets a copy of every descriptor of this process when it is made,
    /// and closes the close-on-exec ones only at its exec; glibc's `posix_spawn` returns once that exec has
    /// happened (or failed).
    private static let spawning = NSLock()

    /// Runs `body` while no child is being started here, so that no child holds a descriptor `body` opens
    /// close-on-exec and closes before it returns: a file `body` removes then gives back its space at once,
    /// and one it writes can be run at once. `body` must not start a child itself (the lock is not
    /// reentrant). Children started by others in the process (Swift Testing's exit tests) are not held back.
    package static func withoutStartingChildren<Result>(_ body: () throws -> Result) rethrows -> Result {
        try spawning.withLock(body)
    }

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), which its headers show Swift only
    /// under `_GNU_SOURCE`: looked up by name.
    private static let addChdir:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32)? = {
            guard let symbol = dlsym(nil, "posix_spawn_file_actions_addchdir_np") else { return nil }
            return unsafeBitCast(
                symbol,
                to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32)
                    .self)
        }()

    /// Attributes that give a child no blocked signals (a thread of the test pool blocks some, and a child
    /// inherits its mask) and the default handling of SIGTERM, SIGINT, SIGPIPE and `more`. Destroy them
    /// after use.
    private static func defaultSignals(adding more: [Int32] = []) -> posix_spawnattr_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE] + more { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        return attributes
    }

    /// A pipe whose two ends are close-on-exec, so no child but the one they are duplicated into gets them
    /// (Glibc's `pipe2` is not visible to Swift: a child spawned between the two calls could still get
    /// them, which the test server undoes by closing what it inherits).
    private static func makePipe() throws -> (reading: Int32, writing: Int32) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// Sends `SIGTERM` and waits until the child has exited; reaps it. Call once.
    package func terminateAndWait() {
        kill(pid, SIGTERM)
        _ = waitForExit()
    }

    /// ``waitForExit()`` on a thread of its own, not one of the test pool: blocking those on children
    /// would starve the other tests on a two-core machine. Call once.
    package func exited() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.waitForExit()) }
        }
    }

    /// The signal that ended a child whose `waitpid` status is `status`; `nil` when it exited.
    package static func signal(of status: Int32) -> Int32? {
        status & 0x7f == 0 ? nil : status & 0x7f
    }

    /// The exit code of a child whose `waitpid` status is `status`; `nil` when a signal ended it.
    package static func exitCode(of status: Int32) -> Int32? {
        signal(of: status) == nil ? (status >> 8) & 0xff : nil
    }

    /// How a child whose `waitpid` status is `status` ended, in words: "exited with code 3", or "was ended
    /// by signal 11 (Segmentation fault)".
    package static func termination(of status: Int32) -> String {
        if let signal = signal(of: status) {
            let name = strsignal(signal).map { String(cString: $0) } ?? "unknown signal"
            return "was ended by signal \(signal) (\(name))"
        }
        return "exited with code \(exitCode(of: status) ?? -1)"
    }

    /// Waits until the child exits, reaps it and returns its `waitpid` status. Call once. Should `waitpid` fail
    /// otherwise than by a signal's interruption (the child reaped elsewhere, or `SIGCHLD` ignored), the status is
    /// unknown and this returns 0; ``run(_:arguments:started:)`` throws then instead.
    package func waitForExit() -> Int32 {
        reaped() ?? 0
    }

    /// ``waitForExit()``, or `nil` (with `errno` set) when `waitpid` fails for a reason other than a signal's
    /// interruption: then the child's status is unknown, and ``run(_:arguments:started:)`` must not take it for a
    /// success.
    private func reaped() -> Int32? {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { return nil }
        }
        return status
    }
}
