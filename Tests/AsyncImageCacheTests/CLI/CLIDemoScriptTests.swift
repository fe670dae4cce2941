import Foundation
import Spawn
import Testing

/// `scripts/demo`, the README's first command, which builds aic and runs it with the arguments it was given.
@Suite struct CLIDemoScriptTests {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/demo")

    /// The script moved to the package's folder before it ran aic, so a relative `--output` run from anywhere
    /// else named a file there: `../repo/scripts/demo --output sheet.png` wrote `repo/sheet.png` and left
    /// none where it was run. The script runs here in a copy of the package's layout, with the build and the
    /// library install standing in as no-ops and the aic under test in place of the release build.
    @Test func aRelativeOutputIsTakenFromTheFolderTheScriptIsRunFrom() async throws {
        let aic = CommandLineRunner()
        let (_, output, environment) = try aic.childSetup()
        let package = aic.workspace.url.appendingPathComponent("package", isDirectory: true)
        let scripts = package.appendingPathComponent("scripts", isDirectory: true)
        let release = package.appendingPathComponent(".build/release", isDirectory: true)
        let tools = aic.workspace.url.appendingPathComponent("tools", isDirectory: true)
        let here = aic.workspace.url.appendingPathComponent("here", isDirectory: true)
        for folder in [scripts, release, tools, here] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        try FileManager.default.copyItem(at: Self.script, to: scripts.appendingPathComponent("demo"))
        // Links to `true`, not scripts written here: a file written for running fails to run ("Text file
        // busy") while a child that another test spawns at that moment holds it open.
        for stub in [scripts.appendingPathComponent("install-system-libraries"), tools.appendingPathComponent("swift")]
        {
            try FileManager.default.createSymbolicLink(at: stub, withDestinationURL: URL(fileURLWithPath: "/bin/true"))
        }
        try FileManager.default.createSymbolicLink(
            at: release.appendingPathComponent("aic"), withDestinationURL: CommandLineRunner.executable)
        var withTools = environment
        withTools["PATH"] = tools.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")

        let demo = try ChildProcess(
            executable: "/bin/bash", arguments: ["../package/scripts/demo", "--output", "sheet.png"],
            environment: withTools, directory: here.path, standardOutput: output, standardError: output)
        let status = await demo.exited()

        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(ChildProcess.exitCode(of: status) == 0, "\(ChildProcess.termination(of: status)): \(log)")
        #expect(log.contains("Contact sheet of the thumbnails: \(here.path)/sheet.png\n"), "\(log)")
        #expect(FileManager.default.fileExists(atPath: here.appendingPathComponent("sheet.png").path))
        #expect(!FileManager.default.fileExists(atPath: package.appendingPathComponent("sheet.png").path))
    }
}
