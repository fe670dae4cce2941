import Foundation
import Spawn

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real HTTP server on 127.0.0.1 for one test or suite: `Tests/Server/image_server.py` run by `python3`.
///
/// It serves the files of a directory at `/images/<name>` and misbehaves on purpose at the routes the
/// script's header lists (`/status/<code>`, `/slow/<ms>/...`, `/truncated/...`, `/oversized/...`, ...).
/// Each instance is its own process on its own ephemeral port, so tests running in parallel do not see
/// each other's counters. The server stops on ``stop()``, when the instance is released, and, through
/// its stdin pipe and a parent watchdog, when the test process dies.
///
/// ```swift
/// let server = try TestHTTPServer(serving: directory.url)
/// let bytes = try await loader.loadData(for: server.url("/images/a.jpg"))
/// #expect(try await server.hits(for: "/images/a.jpg") == 1)
/// ```
final class TestHTTPServer: @unchecked Sendable {
    // Unchecked: `child`, `input` and `port` are constants, and `stopped` is only touched under `lock`.
    /// The port the server listens on.
    let port: Int
    private let child: ChildProcess
    /// The write end of the server's stdin: it exits once this closes.
    private let input: Int32
    private let lock = NSLock()
    private var stopped = false

    /// `Tests/Server/image_server.py`, found from this file's location in the source tree.
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // AsyncImageCacheTests
        .deletingLastPathComponent()  // Tests
        .appendingPathComponent("Server/image_server.py")

    struct ServerError: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts a server for the files in `directory` and waits until it listens.
    ///
    /// The wait (a Python start, slow on a loaded machine) is on a thread of its own: on Swift's
    /// cooperative pool, as wide as the machine has cores, tests starting servers side by side held
    /// every thread of the pool, and the other tests' tasks stood still meanwhile (seen: 15 s).
    convenience init(serving directory: URL) async throws {
        let (child, input, output) = try Self.launch(serving: directory)
        let line = await onOwnThread { Self.firstLine(from: output) }
        try self.init(child: child, input: input, firstLine: line)
    }

    /// Starts a server as ``init(serving:)`` does, waiting on the calling thread: for XCTest cases,
    /// which run on the main thread, not on the cooperative pool.
    convenience init(blockingUntilListening directory: URL) throws {
        let (child, input, output) = try Self.launch(serving: directory)
        try self.init(child: child, input: input, firstLine: Self.firstLine(from: output))
    }

    private init(child: ChildProcess, input: Int32, firstLine: String) throws {
        guard let port = Int(firstLine) else {
            close(input)
            child.terminateAndWait()
            throw ServerError(description: "image_server.py did not print its port (got \"\(firstLine)\")")
        }
        (self.child, self.input, self.port) = (child, input, port)
    }

    /// The path of the Python interpreter, asked of `python3` once: on PATH it may be a shim (pyenv's is
    /// a shell script) that takes longer to start than the server does. `python3` when asking fails.
    private static let python: String = {
        guard
            let (asking, input, output) = try? ChildProcess.start([
                "python3", "-S", "-c", "import sys; print(sys.executable)",
            ])
        else { return "python3" }
        close(input)  // nothing to read
        let path = firstLine(from: output)
        _ = asking.waitForExit()
        return path.hasPrefix("/") ? path : "python3"
    }()

    /// Starts the script for `directory`; returns the child, the write end of its stdin and its stdout.
    private static func launch(serving directory: URL) throws -> (ChildProcess, input: Int32, output: FileHandle) {
        // -S: the script needs the standard library only, and site-packages' start-up hooks cost time.
        try ChildProcess.start([python, "-S", script.path, directory.path])
    }

    /// The first line `handle` gives, without its line break; what came before its end when it ends first,
    /// and the reason when reading fails (which the callers' parsing then reports).
    ///
    /// Read with `read(2)`, a signal's interruption retried: `FileHandle.availableData` stops the
    /// process on any error of its read (seen once on a loaded machine: "FileHandle.swift:231").
    static func firstLine(from handle: FileHandle) -> String {
        var line = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !line.contains(UInt8(ascii: "\n")) {
            let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
                return "\(String(decoding: line, as: UTF8.self)) (read: \(String(cString: strerror(errno))))"
            }
            if count == 0 { break }
            line.append(contentsOf: buffer[..<count])
        }
        return String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit { stop() }

    /// A loopback URL on which nothing listens: port 9 (discard) is closed on these machines.
    static let closedPortURL = URL(string: "http://127.0.0.1:9/images/a.jpg")!

    /// The URL of `path` (starting with `/`) on this server.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// A URL on this server that answers with a `code` redirect to `target`, on any server.
    func redirect(to target: URL, code: Int = 302) -> URL {
        url(
            "/redirect-to/\(code)?\(target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
        )
    }

    /// How many times each path was requested, query strings removed, control routes not counted.
    func hits() async throws -> [String: Int] {
        try JSONDecoder().decode([String: Int].self, from: await get("/__hits"))
    }

    /// How many times `path` was requested.
    func hits(for path: String) async throws -> Int {
        try await hits()[path] ?? 0
    }

    /// The body bytes the server handed to the socket for `path`, an `/oversized` route, or `nil`
    /// when it did not serve that path.
    func bytesSent(for path: String) async throws -> Int? {
        try JSONDecoder().decode([String: Int].self, from: await get("/__sent"))[path]
    }

    /// Waits until the client of the `/trickle` route at `path` hangs up: the server notices at its
    /// next write. Callers bound the wait with a time limit on their suite.
    func waitUntilHungUp(_ path: String) async throws {
        while try JSONDecoder().decode([String: Bool].self, from: await get("/__ended"))[path] != true {
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The statuses a `/cache` or `/cache-lm` route sent for `path`, in order.
    func statuses(for path: String) async throws -> [Int] {
        try JSONDecoder().decode([String: [Int]].self, from: await get("/__statuses"))[path] ?? []
    }

    /// The Accept headers of the requests for `path`, in order ("" for a request without one).
    func accepts(for path: String) async throws -> [String] {
        try JSONDecoder().decode([String: [String]].self, from: await get("/__accepts"))[path] ?? []
    }

    /// The Accept-Encoding headers of the requests for `path`, in order ("" for a request without one).
    func acceptEncodings(for path: String) async throws -> [String] {
        try JSONDecoder().decode([String: [String]].self, from: await get("/__accept-encodings"))[path] ?? []
    }

    /// Lets the `/held/<key>/` requests go: those waiting, and any that come later.
    func release(_ key: String) async throws {
        _ = try await get("/__release/\(key)")
    }

    /// Waits until the `/held-first/<key>/` route has made its held response (read the file it sends).
    /// Callers bound the wait with a time limit on their suite.
    func waitUntilHeldResponseIsMade(_ key: String) async throws {
        while try JSONDecoder().decode([String: Bool].self, from: await get("/__made"))[key] != true {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Clears the hit and byte counters.
    func reset() async throws {
        _ = try await get("/__reset")
    }

    /// Terminates the server and waits until it has exited (and so closed its listening socket);
    /// later calls do nothing.
    func stop() {
        let alreadyStopped = lock.withLock {
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        close(input)
        child.terminateAndWait()
    }

    private func get(_ path: String) async throws -> Data {
        // URLSession.shared, not the loader under test, so counters stay trustworthy.
        let (data, response) = try await URLSession.shared.data(from: url(path))
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw ServerError(description: "\(path) answered \(response)")
        }
        return data
    }
}
