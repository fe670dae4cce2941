import Foundation
import Spawn
import Testing

@testable import AsyncImageCache

/// What a careful user of the command line expects of its output and inputs: a write that fails is
/// a failure, paths and URLs are read as what they are, and a summary says what was done.
@Suite struct CLIOutputAndInputTests {
    /// Runs `aic arguments...` with stdout on /dev/full, where every write fails with ENOSPC.
    private func runWithStdoutOnAFullDisk(_ aic: CommandLineRunner, _ arguments: [String]) async throws -> (
        status: Int32, stderr: String
    ) {
        let stderrFile = aic.workspace.url.appendingPathComponent("stderr.txt")
        try Data().write(to: stderrFile)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = aic.cacheHome.url.path
        let child = try ChildProcess(
            executable: CommandLineRunner.executable.path, arguments: arguments, environment: environment,
            directory: aic.workspace.url.path, standardOutput: "/dev/full", standardError: stderrFile.path)
        let status = try #require(ChildProcess.exitCode(of: await child.exited()))
        return (status, try String(contentsOf: stderrFile, encoding: .utf8))
    }

    /// `aic info photo.jpg --json > info.json` on a full disk wrote nothing and exited with 0: stdout is
    /// buffered, and the failed write at exit went unnoticed.
    @Test(arguments: [["info", "photo.jpg", "--json"], ["cache", "stats"], ["--help"]])
    func outputThatCannotBeWrittenIsAFailure(arguments: [String]) async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("photo.jpg"))

        let result = try await runWithStdoutOnAFullDisk(aic, arguments)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.hasPrefix("aic: ") && result.stderr.contains("No space left on device"), "\(result)")
    }

    /// `aic info photo.jpg >&-`: with stdout closed, the first descriptor aic opened (Dispatch's epoll) took
    /// its number, the line went there, and aic reported "cannot write to stdout: Invalid argument", a reason
    /// that names neither the closed stream nor anything the user did.
    @Test func aStdoutClosedByTheParentIsReportedAsClosed() async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("photo.jpg"))
        let stderrFile = aic.workspace.url.appendingPathComponent("stderr.txt")
        try Data().write(to: stderrFile)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = aic.cacheHome.url.path
        // Python closes descriptor 1 and becomes aic, as a shell does for `>&-`.
        let closedStdout = "import os, sys; os.close(1); os.execv(sys.argv[1], sys.argv[1:])"
        let child = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", closedStdout, CommandLineRunner.executable.path, "info", "photo.jpg"],
            environment: environment, directory: aic.workspace.url.path, standardOutput: "/dev/null",
            standardError: stderrFile.path)
        let status = ChildProcess.exitCode(of: await child.exited())
        let stderr = try String(contentsOf: stderrFile, encoding: .utf8)
        #expect(status == 1, "\(stderr)")
        #expect(stderr == "aic: cannot write to stdout: Bad file descriptor\n", "\(stderr)")
    }

    /// `--output thumbs/` names a folder; when there was none yet, the PNG was written as a file named
    /// `thumbs` and the run succeeded.
    @Test(arguments: ["thumbnail", "sheet"])
    func anOutputEndingInASlashIsNotWrittenAsAFile(command: String) async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("photo.jpg"))

        let result = try await aic.run(command, "photo.jpg", "--width", "20", "--output", "thumbs/")
        #expect(!FileManager.default.fileExists(atPath: aic.file("thumbs").path), "\(result)")
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("thumbs/"), "\(result)")
    }

    /// An INPUT of the form `scheme://` that Foundation cannot parse (a port that is no number, a space
    /// in the host) was read as a path in the current folder: "cannot read /cwd/http:/localhost:abc/a.jpg:
    /// No such file or directory", which names neither the URL nor what is wrong with it.
    @Test(arguments: [
        ["info", "http://localhost:abc/a.jpg"],
        ["thumbnail", "http://exa mple.com/a.jpg", "--width", "20", "--output", "t.png"],
        ["sheet", "http://[::1/a.jpg", "--output", "s.png"],
    ])
    func aMalformedURLIsAUsageErrorNotAMissingFile(arguments: [String]) async throws {
        let aic = CommandLineRunner()
        let result = try await aic.run(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderrLines.first?.hasPrefix("aic: not a valid URL: ") == true, "\(result)")
        #expect(!result.stderr.contains(aic.workspace.url.path), "read as a path: \(result)")
    }

    /// `aic cache trim --max-age 36h` said "trimmed 0 entries not used for 1 day" while keeping entries
    /// unused for 30 hours: the max age was rounded down to a whole day.
    @Test(arguments: [
        ("36h", "36 hours"), ("90", "90 seconds"), ("1.5d", "36 hours"), ("7d", "7 days"), ("0.5", "0.5 seconds"),
    ])
    func trimSaysTheMaxAgeItWasGiven(maxAge: String, said: String) async throws {
        let aic = CommandLineRunner()
        let result = try await aic.run("cache", "trim", "--max-age", maxAge)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("not used for \(said) from"), "\(result)")
    }
}

/// `aic sheet FOLDER` and links.
@Suite struct CLISheetLinkTests {
    /// A link to an image in the folder was left out without a word (the walker's isRegularFile is false
    /// for a link), though the same link named on the command line makes it into the sheet; a folder of
    /// links only was "no images found".
    @Test func aLinkToAnImageInAFolderMakesItIntoTheSheet() async throws {
        let aic = CommandLineRunner()
        let album = aic.file("album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("elsewhere.jpg"))
        try SampleImages.jpeg(width: 30, height: 40).write(to: album.appendingPathComponent("own.jpg"))
        try FileManager.default.createSymbolicLink(
            at: album.appendingPathComponent("linked.jpg"), withDestinationURL: aic.file("elsewhere.jpg"))
        // A link to a folder is not followed, so a loop cannot keep the walk going.
        try FileManager.default.createSymbolicLink(
            at: album.appendingPathComponent("loop"), withDestinationURL: album)

        let result = try await aic.run("sheet", "album", "--width", "20", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("2 of 2 images"), "\(result)")
        #expect(result.stderr.contains("linked.jpg"), "\(result)")
    }

    /// A folder named through a link (`~/Pictures` as a link to another disk) was "no images found": the
    /// walker does not follow a link, not even the one it starts from.
    @Test(arguments: ["pictures", "pictures/"])
    func aLinkToAFolderNamedOnTheCommandLineIsWalked(argument: String) async throws {
        let aic = CommandLineRunner()
        let album = aic.file("album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        try SampleImages.jpeg(width: 40, height: 30).write(to: album.appendingPathComponent("a.jpg"))
        try SampleImages.jpeg(width: 30, height: 40).write(to: album.appendingPathComponent("b.jpg"))
        try FileManager.default.createSymbolicLink(at: aic.file("pictures"), withDestinationURL: album)

        let result = try await aic.run("sheet", argument, "--width", "20", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("2 of 2 images"), "\(result)")
    }
}

/// Paths with `..` after a symbolic link.
@Suite struct CLIDotDotAfterALinkTests {
    /// `link/../a.jpg` names the `a.jpg` beside where `link` points, as `cat` and the system read it; aic
    /// collapsed the `..` in the text and read (or wrote) the `a.jpg` beside the link instead: another file.
    @Test func aPathWithDotDotAfterALinkNamesTheFileTheSystemOpens() async throws {
        let aic = CommandLineRunner()
        let target = aic.file("real/sub")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: aic.file("link"), withDestinationURL: target)
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("real/a.jpg"))
        try SampleImages.jpeg(width: 20, height: 10).write(to: aic.file("a.jpg"))

        let sheet = try await aic.run("sheet", "link/..", "--width", "8", "--output", "sheet.png")
        #expect(sheet.stdout.contains("1 of 1 images, 24x22 px"), "real/a.jpg only: \(sheet)")

        let info = try await aic.run("info", "link/../a.jpg")
        #expect(info.stdout == "40x30 JPEG\n", "\(info)")

        let thumbnail = try await aic.run("thumbnail", "link/../a.jpg", "--width", "8", "--output", "link/../t.png")
        #expect(thumbnail.status == 0, "\(thumbnail)")
        #expect(FileManager.default.fileExists(atPath: aic.file("real/t.png").path), "\(thumbnail)")
        #expect(!FileManager.default.fileExists(atPath: aic.file("t.png").path), "\(thumbnail)")
        #expect(try CommandLineRunner.decodePNG(at: aic.file("real/t.png")).pixelSize == PixelSize(width: 8, height: 6))

        let batch = try await aic.run("thumbnail", "a.jpg", "--width", "8", "--output-dir", "link/..")
        #expect(batch.status == 0, "\(batch)")
        #expect(FileManager.default.fileExists(atPath: aic.file("real/a.png").path), "\(batch)")
    }
}

/// A stderr that cannot be written (a log file on a full disk, `2>&-`).
@Suite struct CLIUnwritableStderrTests {
    /// A workspace with an album of one JPEG, an empty file for stdout and the environment aic runs in.
    /// Commands that succeed (a sheet), fail (a missing file) and misuse the command line, with their exit statuses.
    static let outcomes: [([String], Int32)] = [
        (["sheet", "album", "--width", "8", "--output", "sheet.png"], 0),
        (["info", "missing.jpg"], 1),
        (["thumbnail", "--width"], 2),
    ]

    private static func albumToSheet() throws -> (CommandLineRunner, output: String, environment: [String: String]) {
        let aic = CommandLineRunner()
        try FileManager.default.createDirectory(at: aic.file("album"), withIntermediateDirectories: true)
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("album/a.jpg"))
        let output = aic.workspace.url.appendingPathComponent("stdout").path
        try Data().write(to: URL(fileURLWithPath: output))
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = aic.cacheHome.url.path
        return (aic, output, environment)
    }

    /// Diagnostics went through `FileHandle.write(_:)`, which traps when the write fails: a sheet that
    /// would have been written ended with SIGILL at its first progress line, and a failure that should
    /// have exited with 1 or 2 did too. What cannot be written to stderr is dropped; the command goes on.
    @Test(arguments: outcomes)
    func aStderrOnAFullDiskLeavesTheCommandItsOutcome(arguments: [String], status: Int32) async throws {
        let (aic, output, environment) = try Self.albumToSheet()

        let child = try ChildProcess(
            executable: CommandLineRunner.executable.path, arguments: arguments, environment: environment,
            directory: aic.workspace.url.path, standardOutput: output, standardError: "/dev/full")
        let waitStatus = await child.exited()
        #expect(
            ChildProcess.exitCode(of: waitStatus) == status, "\(arguments): \(ChildProcess.termination(of: waitStatus))"
        )
        if status == 0 {
            #expect(FileManager.default.fileExists(atPath: aic.file("sheet.png").path))
        }
    }

    /// stderr on a pipe whose reader has gone (`aic sheet ... 2>&1 | head -1`): the write raised SIGPIPE,
    /// whose default action ended aic at its first progress line, without its sheet or its status.
    @Test(arguments: outcomes)
    func aStderrPipeWithoutAReaderLeavesTheCommandItsOutcome(arguments: [String], status: Int32) async throws {
        let (aic, output, environment) = try Self.albumToSheet()
        // Python puts stderr on a pipe whose read end it has closed, gives SIGPIPE back its default action
        // (Python ignores it, and an ignored signal stays so through exec), and becomes aic.
        let brokenStderr = """
            import os, signal, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 2); \
            signal.signal(signal.SIGPIPE, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])
            """
        let child = try ChildProcess(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", brokenStderr, CommandLineRunner.executable.path] + arguments,
            environment: environment, directory: aic.workspace.url.path, standardOutput: output,
            standardError: output)
        let waitStatus = await child.exited()
        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(
            ChildProcess.exitCode(of: waitStatus) == status,
            "\(arguments): \(ChildProcess.termination(of: waitStatus)): \(log)")
        if status == 0 {
            #expect(FileManager.default.fileExists(atPath: aic.file("sheet.png").path))
        }
    }
}
