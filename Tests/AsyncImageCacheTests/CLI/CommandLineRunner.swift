import Foundation
import Spawn
import Testing

@testable import AsyncImageCache

/// Runs the built `aic` binary as a user does, in a process of its own, with its own cache folder.
///
/// Every run gets `XDG_CACHE_HOME` inside ``cacheHome``, so the tests never touch the user's real
/// cache and each test sees only the stores it made.
///
/// ```swift
/// let aic = CommandLineRunner()
/// let result = try await aic.run("info", "photo.jpg")
/// #expect(result.status == 0 && result.stdout == "640x480 JPEG\n")
/// ```
final class CommandLineRunner: Sendable {
    /// What a run printed and how it ended.
    struct Result: CustomStringConvertible {
        let status: Int32
        let stdout: String
        let stderr: String

        /// The lines of stderr, without the final newline.
        var stderrLines: [String] {
            stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }

        var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
    }

    /// `aic` in the products folder: SwiftPM builds every product of the package before `swift test`
    /// runs, next to the test bundle's resources. `AIC_EXECUTABLE` names another build instead, so the
    /// same tests can check a release binary (`AIC_EXECUTABLE=.build/release/aic swift test --filter CLI`),
    /// where the optimizer has bitten before.
    static let executable =
        ProcessInfo.processInfo.environment["AIC_EXECUTABLE"].map { URL(fileURLWithPath: $0) }
        ?? Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("aic")

    /// How long one run may take before it is killed; the slowest takes well under a second alone.
    static let timeLimit = Duration.seconds(120)

    /// The folder the child processes see as `XDG_CACHE_HOME`.
    let cacheHome = TemporaryDirectory("cli-cache")
    /// A folder for inputs and outputs, and the children's working directory.
    let workspace = TemporaryDirectory("cli-work")

    /// The disk-tier folder of the store `name` as the children see it.
    func storeFolder(_ name: String = "default") -> URL {
        cacheHome.url.appendingPathComponent("AsyncImageCache/\(name)", isDirectory: true)
    }

    /// The folder ``serve(_:)`` serves, inside ``workspace``.
    var servedFolder: URL {
        workspace.url.appendingPathComponent("served", isDirectory: true)
    }

    /// Writes `files` (name -> bytes) into ``servedFolder`` and starts a loopback server for them at
    /// `/images/<name>`.
    func serve(_ files: [String: Data]) async throws -> TestHTTPServer {
        try FileManager.default.createDirectory(at: servedFolder, withIntermediateDirectories: true)
        for (name, data) in files {
            try data.write(to: servedFolder.appendingPathComponent(name))
        }
        return try await TestHTTPServer(serving: servedFolder)
    }

    /// A file URL in ``workspace``.
    func file(_ name: String) -> URL {
        workspace.url.appendingPathComponent(name)
    }

    /// For a child started by hand (``ChildProcess``): a `tmp` folder in ``workspace`` as its `TMPDIR`, where
    /// `aic demo` makes its folder, an empty file for its stdout and stderr, and the environment with both.
    func childSetup() throws -> (temporary: URL, output: String, environment: [String: String]) {
        let temporary = workspace.url.appendingPathComponent("tmp", isDirectory: true)
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        let output = workspace.url.appendingPathComponent("output").path
        try Data().write(to: URL(fileURLWithPath: output))
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = cacheHome.url.path
        environment["TMPDIR"] = temporary.path
        return (temporary, output, environment)
    }

    /// Runs `aic arguments...` to the end; stdout and stderr go to files, so a chatty run cannot
    /// fill a pipe and stall.
    func run(_ arguments: String...) async throws -> Result {
        try await run(arguments)
    }

    /// Runs `aic arguments...`, killing it after `timeLimit` (``timeLimit`` by default): a test that
    /// checks for a hang need not wait two minutes to fail. `environment` sets variables of the child
    /// after ``cacheHome`` is set (`nil` unsets one).
    func run(
        _ arguments: [String], environment changes: [String: String?] = [:],
        timeLimit: Duration = CommandLineRunner.timeLimit
    ) async throws -> Result {
        try await run(argumentBytes: arguments.map { Array($0.utf8) }, environment: changes, timeLimit: timeLimit)
    }

    /// ``run(_:environment:timeLimit:)`` with each argument given as bytes, which need not be UTF-8 (a file
    /// name in Latin-1, as Linux allows, which a `String` cannot hold).
    func run(
        argumentBytes arguments: [[UInt8]], environment changes: [String: String?] = [:],
        timeLimit: Duration = CommandLineRunner.timeLimit
    ) async throws -> Result {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.executable.path),
            "aic is not built at \(Self.executable.path)")
        let outputs = TemporaryDirectory("cli-output")
        let stdoutFile = outputs.url.appendingPathComponent("stdout")
        let stderrFile = outputs.url.appendingPathComponent("stderr")
        try Data().write(to: stdoutFile)
        try Data().write(to: stderrFile)

        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = cacheHome.url.path
        for (name, value) in changes { environment[name] = value }
        // Spawned directly, not through Foundation's Process (see ChildProcess's init).
        let child = try ChildProcess(
            executable: Self.executable.path, argumentBytes: arguments, environment: environment,
            directory: workspace.url.path, standardOutput: stdoutFile.path, standardError: stderrFile.path)
        // A hung aic must fail its test, not stall the whole suite.
        let pid = child.pid
        let watchdog = Task {
            try await Task.sleep(for: timeLimit)
            kill(pid, SIGKILL)
        }
        let waitStatus = await child.exited()
        watchdog.cancel()
        let signal = ChildProcess.signal(of: waitStatus)
        #expect(
            signal == nil,
            "aic was killed by signal \(signal ?? 0): \(arguments.map { String(decoding: $0, as: UTF8.self) })")
        let status = ChildProcess.exitCode(of: waitStatus)
        return Result(
            status: try #require(status),
            stdout: try String(contentsOf: stdoutFile, encoding: .utf8),
            stderr: try String(contentsOf: stderrFile, encoding: .utf8))
    }

    /// The bitmap in the PNG at `url`, decoded by the library's own decoder.
    static func decodePNG(at url: URL) throws -> Bitmap {
        try decodePNG(try Data(contentsOf: url))
    }

    /// The bitmap in `data`, a PNG, decoded by the library's own decoder.
    static func decodePNG(_ data: Data) throws -> Bitmap {
        let header = try ImageHeader.parse(data)
        #expect(header.format == .png)
        return try ImageDecoders.Default().decode(data, context: ImageDecodingContext(header: header))
    }
}

extension CommandLineRunner {
    /// Copies ``executable`` to `destination`, for another user to run wherever the checkout is (under
    /// `/root`, which only root may enter), through a descriptor no child inherits: one that another test
    /// spawned while a plain copy was open held it open for writing, and running the copy failed with
    /// "Text file busy" (setpriv's status 126, seen once in a whole CLI run). Close-on-exec narrows that
    /// to the moment a child spawned meanwhile (by a suite's helpers, or by Swift Testing for an exit
    /// test) holds a copy of the descriptor between its creation and its exec, which is why a test runs
    /// the copy again when it finds it busy; seen once more in a whole-suite run after the descriptor
    /// became close-on-exec.
    static func copyExecutable(to destination: URL) throws {
        let bytes = try Data(contentsOf: executable)
        let descriptor = open(destination.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                offset += written
            }
        }
    }
}
