import Foundation

/// Runs `arguments[0]` (a path, or a name looked up on `PATH`) with `arguments` as its argument vector
/// until it exits; stdin, stderr and the environment are this process's. Stdout comes back through a pipe
/// read to its end before the wait, so a child that writes more than a pipe holds cannot block on it; with
/// `discardingOutput` it goes to `/dev/null` instead and nothing comes back.
///
/// Started with `posix_spawn`, not Foundation's `Process`, whose `run()` in Swift 6.3.1 now and then
/// crashes the parent (it reads past a `dirent` while it lists `/proc/self/fd`; swift-corelibs-foundation
/// pull request 5472). A trimmed copy of the main package's `ChildProcess.run` (Sources/Spawn), which this
/// package cannot import: it sees only the main package's products, and that target is in none.
///
/// - Throws: ``BenchmarkFailure`` when the child cannot start, when its output cannot be read, or when it
///   exits with a code other than 0 or a signal ends it (the error says which).
func runCommand(_ arguments: [String], discardingOutput: Bool = false) throws -> Data {
    let name = URL(fileURLWithPath: arguments[0]).lastPathComponent
    var ends: [Int32] = [-1, -1]
    if !discardingOutput {
        guard pipe(&ends) == 0 else { throw BenchmarkFailure("pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if discardingOutput {
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
    } else {
        posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO)
    }
    // No blocked signals in the child: a thread of Swift's pool may block some, and a child inherits them.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    var argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, environ)
    if !discardingOutput { close(ends[1]) }
    guard spawned == 0 else {
        if !discardingOutput { close(ends[0]) }
        throw BenchmarkFailure("\(arguments[0]): \(String(cString: strerror(spawned)))")
    }
    var output = Data()
    var readError: (any Error)?
    if !discardingOutput {
        let reading = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        do { output = try reading.readToEnd() ?? Data() } catch { readError = error }
        // Closed before the wait: a child still writing gets EPIPE instead of blocking on a full pipe.
        try? reading.close()
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 {
        guard errno == EINTR else { throw BenchmarkFailure("waitpid \(name): \(String(cString: strerror(errno)))") }
    }
    if let readError { throw BenchmarkFailure("\(name): reading its output: \(readError)") }
    let signal = status & 0x7f
    guard signal == 0 else {
        let description = strsignal(signal).map { String(cString: $0) } ?? "unknown signal"
        throw BenchmarkFailure("\(name) was ended by signal \(signal) (\(description))")
    }
    let code = (status >> 8) & 0xff
    guard code == 0 else { throw BenchmarkFailure("\(name) exited with code \(code)") }
    return output
}
