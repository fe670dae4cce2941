import Foundation
import Spawn
import Testing

/// `aic demo` stopped by Ctrl-C (`SIGINT`), `SIGTERM` or a closed terminal (`SIGHUP`) while its relaunched
/// pass runs.
@Suite struct CLIDemoInterruptionTests {
    /// The signal used to end aic at once, by its default action: the demo's folder (its sample set's
    /// cache) stayed in the temporary directory, and the relaunched pass, which a signal sent to aic
    /// alone does not reach, ran on after it. Now the pass is ended and waited for, the folder removed,
    /// and aic still ends by the signal. `SIGHUP`, sent when the terminal closes, left the folder after
    /// the others were handled.
    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func anInterruptedDemoEndsItsRelaunchedPassAndLeavesNoFolder(signal: Int32) async throws {
        let aic = CommandLineRunner()
        let (temporary, output, environment) = try aic.childSetup()
        let demo = try ChildProcess(
            executable: CommandLineRunner.executable.path,
            arguments: ["demo", "--output", aic.file("sheet.png").path], environment: environment,
            directory: aic.workspace.url.path, standardOutput: output, standardError: output)

        let found = await Self.sendOnceItStartsAChild(signal, to: demo.pid)
        let pass = try #require(found, "the demo ended before its relaunched pass was seen")
        let status = await demo.exited()

        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // On a busy machine the pass, and the demo after it, may end before the signal arrives: aic then
        // exits 0, having removed its folder itself.
        let completed = ChildProcess.exitCode(of: status) == 0 && log.contains("Contact sheet of the thumbnails")
        #expect(
            ChildProcess.signal(of: status) == signal || completed, "\(ChildProcess.termination(of: status)): \(log)")
        let left = try FileManager.default.contentsOfDirectory(atPath: temporary.path)
        #expect(!left.contains { $0.hasPrefix("aic-demo-") }, "left in the temporary folder: \(left)")
        #expect(!Self.isRunning(pass), "the relaunched pass \(pass) runs on after aic ended")
        if Self.isRunning(pass) { kill(pass, SIGKILL) }
    }

    /// A signal that came while the contact sheet was being written ended aic in the middle of Foundation's
    /// atomic write, whose temporary file (`.dat.nosync...`, the whole PNG) stayed beside the sheet for good.
    /// The write is now finished first; aic then ends by the signal, the sheet written.
    @Test func aDemoInterruptedWhileWritingItsSheetLeavesNoTemporaryFile() async throws {
        let aic = CommandLineRunner()
        let sheets = aic.workspace.url.appendingPathComponent("sheets", isDirectory: true)
        let left = try await Self.leftBesideOutput(
            of: aic, running: ["demo", "--output", sheets.appendingPathComponent("sheet.png").path], in: sheets)
        #expect(left.isEmpty, "left beside the sheet: \(left)")
    }

    /// Runs `aic arguments...`, which writes one PNG into `folder` (made here, empty), sends it `SIGINT` as soon
    /// as anything appears there, and returns the other files left there once aic has ended (by the signal,
    /// or on its own with the PNG written).
    static func leftBesideOutput(
        of aic: CommandLineRunner, running arguments: [String], in folder: URL,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [String] {
        let (_, output, environment) = try aic.childSetup()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let child = try ChildProcess(
            executable: CommandLineRunner.executable.path, arguments: arguments, environment: environment,
            directory: aic.workspace.url.path, standardOutput: output, standardError: output)

        let sent = await sendOnceAFileAppears(SIGINT, in: folder, to: child.pid)
        let status = await child.exited()

        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        try #require(
            sent, "aic \(arguments[0]) ended before its output was written: \(log)", sourceLocation: sourceLocation)
        #expect(
            ChildProcess.signal(of: status) == SIGINT || ChildProcess.exitCode(of: status) == 0,
            "\(ChildProcess.termination(of: status)): \(log)", sourceLocation: sourceLocation)
        let written = URL(fileURLWithPath: arguments[arguments.firstIndex(of: "--output")! + 1]).lastPathComponent
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0 != written }
    }

    /// Sends `signal` to `pid` as soon as anything appears in `folder`; `false`, sending nothing, when `pid`
    /// exits first. Watched from a thread of its own, as ``sendOnceItStartsAChild(_:to:)`` is.
    static func sendOnceAFileAppears(_ signal: Int32, in folder: URL, to pid: pid_t) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                while !hasExited(pid) {
                    if let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path), !names.isEmpty {
                        kill(pid, signal)
                        return continuation.resume(returning: true)
                    }
                    usleep(50)
                }
                continuation.resume(returning: false)
            }
        }
    }

    /// Sends `signal` to the child `pid` as soon as it has a child of its own (the demo's relaunched pass,
    /// the one child it starts), and returns that child; `nil`, sending nothing, when `pid` exits first.
    ///
    /// Watched from a thread of its own, not from a task: a release build runs the pass in a few
    /// milliseconds, and a task polling on the cooperative pool, which the other tests keep busy, missed it.
    private static func sendOnceItStartsAChild(_ signal: Int32, to pid: pid_t) async -> pid_t? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                while !hasExited(pid) {
                    if let child = children(of: pid).first {
                        kill(pid, signal)
                        return continuation.resume(returning: child)
                    }
                    usleep(50)
                }
                continuation.resume(returning: nil)
            }
        }
    }

    /// The children of process `pid`: those of each of its threads (`/proc/PID/task/TID/children`).
    private static func children(of pid: pid_t) -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            return text.split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
    }

    /// Whether the child `pid` has exited, without reaping it.
    static func hasExited(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0
            && info._sifields._sigchld.si_pid == pid
    }

    /// Whether `pid` is a process that has not exited (neither gone nor a zombie).
    private static func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        return !stat[stat.index(after: end)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }
}
