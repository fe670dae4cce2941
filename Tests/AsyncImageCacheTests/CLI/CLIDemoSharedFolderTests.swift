import Foundation
import Spawn
import Testing

/// `aic demo` on a machine it shares with other users, whose temporary folder (`/tmp`) is everyone's.
@Suite struct CLIDemoSharedFolderTests {
    /// The contact sheet's default path was the same for everyone, `/tmp/aic-demo-sheet.png`: once another
    /// user had run the demo (or the same user with `sudo scripts/demo`), the sticky temporary folder let
    /// no one else replace that file, and the demo, run with no arguments, went through its three passes
    /// and then failed ("cannot write /tmp/aic-demo-sheet.png: ... You don't have permission.", exit 1).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func theDemoWritesItsSheetWhenAnotherUsersSheetIsInTheSharedTemporaryFolder() async throws {
        let aic = CommandLineRunner()
        let (temporary, output, environment) = try aic.childSetup()
        chmod(temporary.path, 0o1777)
        // Root's sheet, by the name it had and by the one root's demo gives it now.
        let othersSheets = ["aic-demo-sheet.png", "aic-demo-sheet-0.png"].map { temporary.appendingPathComponent($0) }
        for sheet in othersSheets { try Data("root's sheet".utf8).write(to: sheet) }
        let home = temporary.appendingPathComponent("home", isDirectory: true)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        chown(home.path, 65534, 65534)
        // A copy the other user can run wherever the checkout is (under /root, which only root may enter).
        let executable = home.appendingPathComponent("aic")
        try CommandLineRunner.copyExecutable(to: executable)
        var asNobody = environment
        asNobody["HOME"] = home.path
        asNobody["XDG_CACHE_HOME"] = home.appendingPathComponent(".cache").path
        var (status, log) = (Int32(0), "")
        // Up to five tries, only while the copy cannot run yet: see ``copyExecutable(_:to:)``.
        for attempt in 1...5 {
            let demo = try ChildProcess(
                executable: "/usr/bin/setpriv",
                arguments: [
                    "--reuid=65534", "--regid=65534", "--clear-groups", executable.path, "demo",
                ],
                environment: asNobody, directory: home.path, standardOutput: output, standardError: output)
            status = await demo.exited()
            log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            guard attempt < 5, ChildProcess.exitCode(of: status) == 126, log.contains("Text file busy") else { break }
            try await Task.sleep(for: .milliseconds(100))
        }

        #expect(ChildProcess.exitCode(of: status) == 0, "\(ChildProcess.termination(of: status)): \(log)")
        let sheetLine = try #require(
            log.split(separator: "\n").first { $0.hasPrefix("Contact sheet of the thumbnails: ") }, "\(log)")
        let sheet = String(sheetLine.dropFirst("Contact sheet of the thumbnails: ".count))
        #expect(sheet.hasPrefix(temporary.path + "/"), "\(sheet)")
        #expect(FileManager.default.fileExists(atPath: sheet))
        for sheet in othersSheets { #expect(try Data(contentsOf: sheet) == Data("root's sheet".utf8)) }
    }

    /// The demo's folder (its cache, which the relaunched pass reads back and decodes) is a new one that only
    /// its user may enter, each run: it was named after the process (`aic-demo-<pid>`) and made with the
    /// default mode, so in a shared temporary folder another user could make it first and fill it, and a
    /// folder an earlier `--keep` left under the same number was used and then removed.
    @Test func theDemosFolderIsANewOneOnlyItsUserMayEnter() async throws {
        let aic = CommandLineRunner()
        let (temporary, _, environment) = try aic.childSetup()
        var folders: [String] = []
        for run in 1...2 {
            let result = try await aic.run(
                ["demo", "--keep", "--output", aic.file("sheet-\(run).png").path],
                environment: ["TMPDIR": environment["TMPDIR"]])
            #expect(result.status == 0, "\(result)")
            let made = try FileManager.default.contentsOfDirectory(atPath: temporary.path)
                .filter { $0.hasPrefix("aic-demo-") && !folders.contains($0) }
            try #require(made.count == 1, "\(made)")
            folders += made
            var status = stat()
            try #require(stat(temporary.appendingPathComponent(made[0]).path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700, "mode \(String(status.st_mode & 0o777, radix: 8))")
        }
        #expect(folders.count == 2 && folders[0] != folders[1])
    }
}
