import AsyncImageCache
import Foundation
import Spawn

/// `aic demo`: the sample set through the store three times, cold, warm and after a real relaunch
/// (a fresh `aic` process with the server gone), with what each tier did and a contact sheet.
///
/// The relaunch pass is this same command run again by the demo as a child process, with options
/// the help does not list: `aic demo --pass relaunch --root DIR URL...`. It opens the store in
/// `DIR`, loads the URLs and prints its ``DemoPass`` as one JSON line.
enum Demo: Subcommand {
    static let width = 320
    static let radius = 16
    static let sheetColumns = 3

    static let name = "demo"
    static let summary = "push the built-in sample set through the store and show what each tier did"
    static let synopsis = "aic [demo] [--output sheet.png] [--keep]"
    static let details = """
        The demo serves a generated sample set (JPEG and PNG, up to 4000x3000, one with EXIF
        orientation 6) from a loopback HTTP server and loads it three times at \(width) px with \(radius) px
        corners: cold (fetched and decoded), warm (memory hits), and in a fresh aic process with the
        server stopped, as after a relaunch (sizes from the disk tier's xattr, pixels from disk). It
        prints where each image came from, pass by pass, then a table with a row per pass, and writes
        a contact sheet of the thumbnails. It uses its own store in a temporary folder, never the
        user's cache.

        OPTIONS
          --output FILE   where to write the contact sheet PNG (default \(defaultSheetPath))
          --keep          keep the temporary folder with the cache (default: remove it, on Ctrl-C too)

        EXAMPLES
          aic
          aic demo --output sheet.png --keep
        """
    static let options: Set<String> = ["--output", "--pass", "--root"]
    static let flags: Set<String> = ["--keep"]

    /// Named for the user: in a shared, sticky temporary folder (`/tmp`) no one may replace a file another
    /// user wrote, and the demo run after someone else's (or after `sudo scripts/demo`) failed at its end.
    static var defaultSheetPath: String {
        FileManager.default.temporaryDirectory.appendingPathComponent("aic-demo-sheet-\(getuid()).png").path
    }

    static func run(_ arguments: Arguments) async throws {
        if let pass = arguments.value("--pass") {
            guard pass == "relaunch" else { throw UsageError("--pass takes one value: relaunch") }
            let root = URL(fileURLWithPath: try arguments.required("--root"), isDirectory: true)
            let urls = try arguments.positionals.map { text throws(UsageError) -> URL in
                guard let url = URL(string: text), url.scheme != nil else { throw UsageError("not a URL: \(text)") }
                return url
            }
            let store = try ImageStore(configuration: configuration(root: root))
            let (relaunched, _) = try await DemoPass.run(
                "3 relaunch", store: store, urls: urls, width: width, radius: radius)
            Console.out(try relaunched.jsonLine())
            return
        }
        guard arguments.positionals.isEmpty else { throw UsageError("demo takes no arguments") }
        guard arguments.value("--root") == nil else { throw UsageError("--root goes with --pass") }
        let sheet = try PNGOutput(argument: try PNGOutput.checkedPath(arguments.value("--output") ?? defaultSheetPath))
        try await run(sheet: sheet, keepFiles: arguments.flag("--keep"))
    }

    /// The demo's store, in `root`: the same in the demo and in the process it relaunches.
    static func configuration(root: URL) -> ImageStore.Configuration {
        var configuration = ImageStore.Configuration(name: "aic-demo")
        configuration.rootDirectory = root
        return configuration
    }

    /// A new folder of the demo's own in the temporary folder, made by `mkdtemp`: under a name no one chose
    /// before, that only this user may enter. Named after the process, it was whatever was there already:
    /// a folder an earlier `--keep` left under the same number, used and then removed, or, in a temporary
    /// folder shared with others, one another user made first, holding the cache the relaunch decodes.
    static func makeWorkspace() throws -> URL {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("aic-demo-XXXXXX").path
        var path = Array(template.utf8CString)
        guard mkdtemp(&path) != nil else {
            throw CommandFailure("\(template): \(String(cString: strerror(errno)))")
        }
        // The template with its last six characters replaced, and its terminating NUL.
        return URL(
            fileURLWithPath: String(decoding: path.dropLast().map(UInt8.init(bitPattern:)), as: UTF8.self),
            isDirectory: true)
    }

    static func run(sheet: PNGOutput, keepFiles: Bool) async throws {
        let workspace = try makeWorkspace()
        let root = workspace.appendingPathComponent("cache", isDirectory: true)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { if !keepFiles { try? FileManager.default.removeItem(at: workspace) } }
        // Ctrl-C removes the folder too, and ends the relaunched pass.
        let interruption = Interruption(removing: keepFiles ? nil : workspace)

        bypassProxiesForLoopback()
        // Inherited through exec from a parent that ignored it, an ignored SIGCHLD has the kernel reap the
        // relaunched pass as it ends, and waiting for it failed ("waiting for it: No child processes").
        signal(SIGCHLD, SIG_DFL)

        Console.out("Making the sample set...")
        let samples = try SampleSet.make()
        let server = try LoopbackServer(
            files: Dictionary(uniqueKeysWithValues: samples.items.map { ("/\($0.name)", $0.data) }))
        let urls = samples.items.map { server.url("/\($0.name)") }
        let report = DemoReport(samples: samples)
        let store = try ImageStore(configuration: configuration(root: root))

        Console.out(
            "\nPass 1, cold: no size is known yet; every image is fetched over loopback HTTP and decoded at \(width) px."
        )
        let (cold, _) = try await DemoPass.run("1 cold", store: store, urls: urls, width: width, radius: radius)
        report.printRows(of: cold)

        Console.out("\nPass 2, warm: the same store; sizes and thumbnails come from memory.")
        let (warm, thumbnails) = try await DemoPass.run(
            "2 warm", store: store, urls: urls, width: width, radius: radius)
        report.printRows(of: warm)
        store.waitForDiskMaintenance()
        let httpRequests = server.requestCount
        server.stop()

        Console.out("\nPass 3, relaunch: a fresh aic process opens the same store folder; the server is stopped.")
        let relaunched = try relaunch(root: root, urls: urls, interruption: interruption)
        report.printRows(of: relaunched)

        report.printTable([cold, warm, relaunched])
        Console.out(
            "The server answered \(httpRequests) HTTP requests for \(urls.count) images, all before the relaunch.")

        let layout = SheetLayout(
            sizes: thumbnails.map(\.pixelSize), cellWidth: width, columns: sheetColumns, gap: SheetCommand.gap)
        let composite = layout.composite(thumbnails)
        try interruption.finishing { try sheet.write(composite) }
        let usage = store.diskUsage()
        Console.out(
            "\nDisk tier: \(usage.fileCount) files, \(Formatted.bytes(usage.byteCount)) in \(store.directory.path)")
        Console.out("Contact sheet of the thumbnails: \(sheet.path)")
        if !keepFiles { Console.out("(`aic demo --keep` keeps the cache folder)") }
    }

    /// Keeps the demo's requests to its loopback server off any proxy the environment names (`http_proxy`,
    /// `all_proxy`): libcurl, which URLSession uses on Linux, sends a request for 127.0.0.1 through such a
    /// proxy too, which cannot reach this process's server, and the demo failed at its first image. The
    /// address is added to `no_proxy` and `NO_PROXY` (whichever libcurl reads), after what they list.
    private static func bypassProxiesForLoopback() {
        for name in ["no_proxy", "NO_PROXY"] {
            let current = getenv(name).map { String(cString: $0) } ?? ""
            let hosts = current.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !hosts.contains("127.0.0.1"), !hosts.contains("*") else { continue }
            setenv(name, hosts.isEmpty ? "127.0.0.1" : current + ",127.0.0.1", 1)
        }
    }

    /// Runs the relaunch pass in a fresh process of this executable and returns what it did.
    ///
    /// Started with posix_spawn (``ChildProcess``), not Foundation's `Process`, whose `run()` in Swift 6.3.1
    /// now and then crashes the parent (it reads past a `dirent` while it lists `/proc/self/fd`).
    private static func relaunch(root: URL, urls: [URL], interruption: Interruption) throws -> DemoPass {
        let arguments = ["demo", "--pass", "relaunch", "--root", root.path] + urls.map(\.absoluteString)
        let output: Data
        do {
            try interruption.childStarting()
            defer { interruption.childEnded() }
            output = try ChildProcess.run(executableURL.path, arguments: arguments) { interruption.childStarted($0) }
        } catch let error as ChildProcess.SpawnError where error.exitCode != nil {
            // The child got to say why, on the stderr it shares, as every failing aic does; a second line
            // here only said that it failed ("the relaunch pass failed: aic exited with code 1").
            throw ReportedFailure()
        } catch {
            // It did not start, was ended by a signal, or could not be read or waited for: this is the one line.
            throw CommandFailure("the relaunch pass failed: \(error)")
        }
        return try DemoPass(jsonLine: String(decoding: output, as: UTF8.self))
    }

    /// This program's own file: `/proc/self/exe` on Linux, which holds even when aic was started
    /// through `PATH` or a relative path.
    private static var executableURL: URL {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path)
        }
        return Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
    }
}
