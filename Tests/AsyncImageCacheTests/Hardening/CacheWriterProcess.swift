import Foundation

/// `aic _cache-writer` run as a child process, for the tests that kill a writer or run two at once.
///
/// ```swift
/// let writer = try CacheWriterProcess(root: folder, diskLimit: 300_000, urls: urls)
/// let (status, output) = await writer.finish()   // or: await writer.kill()
/// ```
final class CacheWriterProcess: @unchecked Sendable {
    // Unchecked: every property is a constant set in init; `Process` is only asked for its pid
    // and status after it has exited.
    private let process = Process()
    private let output: URL
    private let exits: AsyncStream<Int32>
    private let outputFolder = TemporaryDirectory("writer-output")

    /// Starts a writer for the store "writer" in `root`.
    init(root: URL, diskLimit: Int, concurrency: Int = 4, urls: [URL]) throws {
        output = outputFolder.url.appendingPathComponent("stdout")
        try Data().write(to: output)
        process.executableURL = CommandLineRunner.executable
        process.arguments =
            [
                "_cache-writer", "--root", root.path, "--disk-limit", String(diskLimit),
                "--concurrency", String(concurrency),
            ] + urls.map(\.absoluteString)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: output)
        let (exits, exited) = AsyncStream<Int32>.makeStream()
        self.exits = exits
        // Awaited rather than waitUntilExit(), which would block a thread of the test pool.
        process.terminationHandler = { exited.yield($0.terminationStatus) }
        try process.run()
    }

    /// Waits for the writer to exit; its status and what it printed.
    func finish() async -> (status: Int32, output: String) {
        var iterator = exits.makeAsyncIterator()
        let status = await iterator.next() ?? -1
        return (status, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }

    /// Sends SIGKILL and waits for the process to go; whether it was still running when killed.
    @discardableResult
    func kill() async -> Bool {
        _ = Foundation.kill(process.processIdentifier, SIGKILL)
        _ = await finish()
        return process.terminationReason == .uncaughtSignal
    }
}
