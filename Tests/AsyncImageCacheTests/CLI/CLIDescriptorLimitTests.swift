import Foundation
import Spawn
import Testing

/// `aic` under a low limit on open files (`ulimit -n`), which a shell, a container or a service manager may set.
@Suite struct CLIDescriptorLimitTests {
    /// Starts `aic arguments...` with the limit on open files at `soft` and `hard` (set by Python, which
    /// then becomes aic), its stdout and stderr in one file; returns the exit code (`nil` when a signal ended
    /// it) and what it wrote.
    private func run(_ aic: CommandLineRunner, soft: Int, hard: Int, _ arguments: [String]) async throws -> (
        status: Int32?, output: String
    ) {
        let (_, output, environment) = try aic.childSetup()
        let limited = """
            import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (\(soft), \(hard))); \
            os.execv(sys.argv[1], sys.argv[1:])
            """
        let child = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", limited, CommandLineRunner.executable.path] + arguments,
            environment: environment, directory: aic.workspace.url.path, standardOutput: output,
            standardError: output)
        let status = ChildProcess.exitCode(of: await child.exited())
        return (status, try String(contentsOfFile: output, encoding: .utf8))
    }

    /// With 6 files allowed and no way to raise it, every command ended with SIGILL: Dispatch traps when it
    /// cannot make the descriptors it needs. Now aic says what is missing and exits with 1.
    @Test func aHardLimitTooLowIsReportedAsSuch() async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("photo.jpg"))

        let result = try await run(aic, soft: 6, hard: 6, ["info", "photo.jpg"])
        #expect(result.status == 1, "\(result)")
        #expect(result.output == "aic: only 6 files may be open at once (ulimit -n); aic needs 32\n", "\(result)")
    }

    /// A soft limit of 8 under a hard limit of 4096: the demo stopped at "cannot start the loopback server:
    /// socket failed (errno 24)", or at "Couldn't connect to server" from 7 to 12 files. aic raises the soft
    /// limit, as the hard one lets it, and the demo runs through.
    @Test func aLowSoftLimitIsRaisedForTheDemo() async throws {
        let aic = CommandLineRunner()
        let sheet = aic.file("sheet.png")

        let result = try await run(aic, soft: 8, hard: 4096, ["demo", "--output", sheet.path])
        #expect(result.status == 0, "\(result)")
        #expect(FileManager.default.fileExists(atPath: sheet.path), "\(result)")
    }

    /// The demo's loopback server out of descriptors for a moment, as under a process-wide EMFILE: its accept
    /// loop took any failed `accept` but EINTR for `stop()` and ended, and the demo's first request waited for an
    /// answer until it failed ("aic: timed out loading http://127.0.0.1:PORT/photo-large.jpg", exit 1, after
    /// 30 s). Now the loop pauses and accepts again, and the demo runs through.
    ///
    /// The shortage is made by aic's test harness (`AIC_TEST_DESCRIPTOR_SQUEEZE_MS`): once the first
    /// request's connection is pending, the soft limit on open files drops to the lowest free descriptor for
    /// 200 ms, and the kernel fails the server's `accept` with EMFILE until it comes back. A low limit set from
    /// outside could not starve the server alone at one moment, nor let it recover.
    @Test func theDemoServerAcceptsAgainAfterRunningOutOfDescriptors() async throws {
        let aic = CommandLineRunner()
        let sheet = aic.file("sheet.png")

        let result = try await aic.run(
            ["demo", "--output", sheet.path], environment: ["AIC_TEST_DESCRIPTOR_SQUEEZE_MS": "200"],
            timeLimit: .seconds(60))
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr == "", "\(result)")
        #expect(result.stdout.contains("Pass 3, relaunch"), "\(result)")
        #expect(result.stdout.contains("The server answered 6 HTTP requests for 6 images"), "\(result)")
        #expect(FileManager.default.fileExists(atPath: sheet.path), "\(result)")
    }
}
