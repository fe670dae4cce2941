import Foundation
import Spawn
import Testing

/// `aic demo` started by a program that ignores `SIGCHLD` (some daemons and scripts do), which aic
/// inherits through `exec`.
@Suite struct CLIDemoSignalTests {
    /// With `SIGCHLD` ignored the kernel reaps a child as it exits: the demo's wait for its relaunched pass
    /// failed, and so did the demo ("aic: the relaunch pass failed: aic: waiting for it: No child
    /// processes"). It restores the default before it relaunches itself.
    @Test func theDemoRunsWhenItsParentLeftSIGCHLDIgnored() async throws {
        let aic = CommandLineRunner()
        let (_, output, environment) = try aic.childSetup()
        // Python ignores SIGCHLD and then becomes aic, which keeps the disposition.
        let ignoring =
            "import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"
        let demo = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", ignoring, CommandLineRunner.executable.path, "demo", "--output", "sheet.png"],
            environment: environment, directory: aic.workspace.url.path, standardOutput: output,
            standardError: output)
        let status = await demo.exited()

        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(ChildProcess.exitCode(of: status) == 0, "\(ChildProcess.termination(of: status)): \(log)")
        #expect(log.contains("Pass 3, relaunch"), "\(log)")
        #expect(FileManager.default.fileExists(atPath: aic.file("sheet.png").path))
    }
}
