import Foundation
import Testing

@testable import AsyncImageCache

/// How `aic` fails: exit 1 with exactly one `aic: ...` line on stderr when a command fails, exit 2
/// with a usage hint when the command line is wrong, and help that documents both.
@Suite struct CLIFailureTests {
    /// One failing input per case, and words the one line must contain.
    enum FailingInput: String, CaseIterable {
        case missingFile, notFoundURL, corruptFile

        var expectedWords: [String] {
            switch self {
            case .missingFile: ["cannot read", "missing.jpg", "No such file"]
            case .notFoundURL: ["HTTP 404", "/status/404"]
            case .corruptFile: ["corrupt.jpg", "not a recognised image format"]
            }
        }
    }

    @Test(arguments: FailingInput.allCases, ["info", "thumbnail"])
    func aFailureExitsWithOneAndOneLineSayingWhat(input: FailingInput, command: String) async throws {
        let aic = CommandLineRunner()
        try Data("this is not an image\n".utf8).write(to: aic.file("corrupt.jpg"))
        let server = try await TestHTTPServer(serving: aic.workspace.url)
        defer { server.stop() }
        let argument =
            switch input {
            case .missingFile: "missing.jpg"
            case .notFoundURL: server.url("/status/404").absoluteString
            case .corruptFile: "corrupt.jpg"
            }
        let options = command == "thumbnail" ? ["--width", "10", "--output", "out.png"] : []

        let result = try await aic.run([command, argument] + options)
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1, "\(result)")
        let line = try #require(result.stderrLines.first)
        #expect(line.hasPrefix("aic: "))
        for word in input.expectedWords {
            #expect(line.contains(word), "\(line)")
        }
        #expect(!FileManager.default.fileExists(atPath: aic.file("out.png").path), "nothing written")
    }

    @Test(arguments: [
        ["frobnicate"],
        ["--verbose"],
        ["info"],
        ["info", "a.jpg", "b.jpg"],
        ["info", "a.jpg", "--jsn"],
        ["thumbnail", "a.jpg", "--output", "t.png"],
        ["thumbnail", "a.jpg", "--width", "wide", "--output", "t.png"],
        ["thumbnail", "a.jpg", "--width", "0", "--output", "t.png"],
        ["thumbnail", "a.jpg", "--width", "10"],
        ["thumbnail", "a.jpg", "--width", "10", "--width", "20", "--output", "t.png"],
        ["thumbnail", "a.jpg", "--width", "10", "--output", "t.jpg"],
        ["info", ""],
        ["info", "--", ""],
        ["sheet", "a.jpg", "--output", "s.WEBP"],
        ["demo", "--output", "demo.jpeg"],
        ["sheet", "--output", "s.png"],
        ["sheet", "a.jpg", "--columns", "0", "--output", "s.png"],
        ["cache"],
        ["cache", "empty"],
        ["cache", "stats", "--name", "../escape"],
        ["cache", "trim", "--max-age", "soon"],
        ["demo", "extra"],
        ["help", "frobnicate"],
        ["--help", "thumbnails"],
        ["help", "info", "thumbnail"],
    ])
    func badUsageExitsWithTwoAndAUsageHint(arguments: [String]) async throws {
        let aic = CommandLineRunner()
        let result = try await aic.run(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.stdout.isEmpty)
        let lines = result.stderrLines
        #expect(lines.first?.hasPrefix("aic: ") == true, "\(result)")
        #expect(lines.contains("usage:"), "\(result)")
        #expect(lines.last?.contains("--help") == true, "\(result)")
        #expect(lines.count <= 6, "a short hint, not the whole help")
    }

    @Test(arguments: [
        ["--help"], ["-h"], ["help"], ["info", "--help"], ["thumbnail", "-h"], ["sheet", "--help"],
        ["cache", "--help"], ["help", "cache"], ["demo", "--help"],
    ])
    func helpReadsWellAndDocumentsTheExitCodes(arguments: [String]) async throws {
        let aic = CommandLineRunner()
        let result = try await aic.run(arguments)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty)
        for section in ["USAGE", "EXIT CODES", "0  success", "1  the command failed", "2  bad usage"] {
            #expect(result.stdout.contains(section), "\(section) in \(arguments)")
        }
        if arguments.count > 1 {
            #expect(result.stdout.contains("OPTIONS") && result.stdout.contains("EXAMPLES"))
        }
        #expect(result.stdout.split(separator: "\n").allSatisfy { $0.count <= 110 }, "fits a wide terminal")
    }

    /// With no command aic runs the demo (`aic [demo] [--output sheet.png] [--keep]`), and `scripts/demo`
    /// passes its arguments on: the demo's options work without the word `demo`. An output in a folder that
    /// does not exist shows it without running the demo: the demo's own check refuses it.
    @Test(arguments: [["--output", "missing/sheet.png"], ["--keep", "--output", "missing/sheet.png"]])
    func theDemosOptionsWorkWithoutTheWordDemo(arguments: [String]) async throws {
        let aic = CommandLineRunner()
        let bare = try await aic.run(arguments)
        let named = try await aic.run(["demo"] + arguments)
        #expect(named.status == 1 && named.stderr.contains("no folder"), "\(named)")
        #expect(bare.status == named.status, "\(bare)")
        #expect(bare.stderr == named.stderr)
    }

    /// A Foundation error that reached the top (here the demo's folder, which cannot be made in /proc)
    /// printed its whole dump: `aic: Error Domain=NSCocoaErrorDomain Code=4 "The file doesn't exist."
    /// UserInfo={NSURL=..., NSFilePath=..., NSUnderlyingError=...}`. It says the path and the system's reason.
    @Test func aFileSystemErrorSaysItsPathAndTheReason() async throws {
        let aic = CommandLineRunner()
        let result = try await aic.run(["demo", "--output", "sheet.png"], environment: ["TMPDIR": "/proc"])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderrLines.count == 1, "\(result)")
        let line = result.stderrLines.first ?? ""
        #expect(line.hasPrefix("aic: /proc/aic-demo-") && line.hasSuffix(": No such file or directory"), "\(result)")
    }

    /// `--output=` with nothing after the `=` is a missing value, not an invitation to take the next
    /// word: that word is an input here, and the sheet would be written over it.
    @Test func anEmptyOptionValueIsAUsageErrorAndTheNextWordStaysAnInput() async throws {
        let aic = CommandLineRunner()
        let first = try SampleImages.jpeg(width: 40, height: 30)
        let second = try SampleImages.jpeg(width: 30, height: 40)
        try first.write(to: aic.file("a.jpg"))
        try second.write(to: aic.file("b.jpg"))

        let result = try await aic.run("sheet", "a.jpg", "--output=", "b.jpg")
        #expect(result.status == 2, "\(result)")
        #expect(try Data(contentsOf: aic.file("b.jpg")) == second, "the input b.jpg is intact")

        let flag = try await aic.run("info", "a.jpg", "--json=")
        #expect(flag.status == 2, "\(flag)")
    }

    /// A FIFO is not an image file: opening one for reading waits for a writer that never comes.
    @Test(arguments: ["info", "thumbnail"])
    func aFIFOFailsAtOnceInsteadOfWaitingForAWriter(command: String) async throws {
        let aic = CommandLineRunner()
        #expect(mkfifo(aic.file("pipe.jpg").path, 0o600) == 0)
        let options = command == "thumbnail" ? ["--width", "10", "--output", "out.png"] : []

        let result = try await aic.run([command, "pipe.jpg"] + options, timeLimit: .seconds(15))
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("is not a regular file"), "\(result)")
    }

    /// The demo's relaunch pass, a second aic, failing alone: with its temporary folder on a 64 KB tmpfs, the
    /// disk tier keeps none of the images (passes 1 and 2 still load them over HTTP and from memory), so the
    /// relaunched aic asks the stopped server and fails. It says why on the stderr it shares with the demo,
    /// and the demo said again that it failed: two lines, the second "aic: the relaunch pass failed: aic exited
    /// with code 1". Now the child's line is the one.
    ///
    /// Not under ThreadSanitizer (scripts/test-tsan, which sets TSAN_OPTIONS): there every aic first writes a
    /// 512 KB file into TMPDIR (tsan.rodata.PID) and maps it, and dies of SIGBUS when it does not fit. A volume
    /// with room for it does not help: the demo's disk tier fills whatever room there is, and the relaunched
    /// aic then dies the same way.
    @Test(.disabled(if: ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil, "TSan needs 512 KB in TMPDIR"))
    func aFailedRelaunchPassIsOneLine() async throws {
        let aic = CommandLineRunner()
        let volume = try ScratchFileSystem(byteCount: 64 * 1024)

        let result = try await aic.run(
            ["demo", "--output", aic.file("sheet.png").path], environment: ["TMPDIR": volume.url.path])
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.contains("Pass 3, relaunch"), "\(result)")
        #expect(result.stderrLines.count == 1, "\(result)")
        let line = try #require(result.stderrLines.first)
        #expect(line.hasPrefix("aic: network error loading http://127.0.0.1:"), "\(result)")
        // libcurl's words: "Couldn't connect to server" in libcurl 7 (Debian 12), "Could not ..." in 8 (Debian 13).
        #expect(
            line.contains("photo-large.jpg")
                && (line.contains("Couldn't connect to server") || line.contains("Could not connect to server")),
            "\(result)")
    }
}
