import Foundation
import Spawn

/// `aic _cache-writer` run as a child process, for the tests that kill a writer or run two at once.
///
/// ```swift
/// let writer = try CacheWriterProcess(root: folder, diskLimit: 300_000, urls: urls)
/// let (status, output) = await writer.finish()   // or: await writer.kill()
/// ```
final class CacheWriterProcess: Sendable {
    // Spawned directly, not through Foundation's Process (see ChildProcess's init).
    private let child: ChildProcess
    private let output: URL
    /// The child's `waitpid` status, once it has exited.
    private let exit: Task<Int32, Never>
    private let outputFolder = TemporaryDirectory("writer-output")

    /// Starts a writer for the store "writer" in `root`.
    init(root: URL, diskLimit: Int, concurrency: Int = 4, urls: [URL]) throws {
        output = outputFolder.url.appendingPathComponent("stdout")
        try Data().write(to: output)
        let arguments =
            [
                "_cache-writer", "--root", root.path, "--disk-limit", String(diskLimit),
                "--concurrency", String(concurrency),
            ] + urls.map(\.absoluteString)
        let child = try ChildProcess(
            executable: CommandLineRunner.executable.path, arguments: arguments,
            environment: ProcessInfo.processInfo.environment,
            directory: FileManager.default.currentDirectoryPath, standardOutput: output.path,
            standardError: output.path)
        self.child = child
        exit = Task { await child.exited() }
    }

    /// Waits for the writer to exit; its status (the signal's number if one ended it) and what it printed.
    func finish() async -> (status: Int32, output: String) {
        let waitStatus = await exit.value
        let status = ChildProcess.exitCode(of: waitStatus) ?? ChildProcess.signal(of: waitStatus) ?? -1
        return (status, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }

    /// Sends SIGKILL and waits for the process to go; whether it was still running when killed.
    @discardableResult
    func kill() async -> Bool {
        _ = Foundation.kill(child.pid, SIGKILL)
        return ChildProcess.signal(of: await exit.value) != nil
    }
}
