import AsyncImageCache
import Foundation

/// `aic-benchmarks scroll`: the same 30 flings through seed 003's list of local JPEGs, once with our
/// store through ``CachedImageModel`` and once with seed 002's naive loader, each in its own
/// process so their peak memory compares; then a table against the goals.
enum ScrollBenchmark {
    static let fixtures = FileManager.default.temporaryDirectory.appendingPathComponent("aic-scroll-fixtures-v1")

    /// The parent: writes the files once, runs both loaders as children, prints the table.
    static func runBoth() throws {
        print("writing fixtures into \(fixtures.path) (reused on later runs)...")
        try ScrollLayout.prepareFiles(in: fixtures)
        let ours = try spawnChild(loader: "ours")
        let naive = try spawnChild(loader: "naive")
        printTable(ours: ours, naive: naive)
    }

    private static func spawnChild(loader: String) throws -> ScrollResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = ["scroll", "--loader", loader]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        guard process.terminationStatus == 0,
            let result = try? JSONDecoder().decode(ScrollResult.self, from: Data(line.utf8))
        else {
            throw CocoaError(
                .executableLoad, userInfo: [NSLocalizedDescriptionKey: "scroll --loader \(loader) failed: \(line)"])
        }
        return result
    }

    /// The child: runs one loader on the main run loop, prints its result as JSON and exits.
    static func runChild(loader: String) -> Never {
        Task { @MainActor in
            let result = await measure(loader: loader)
            let json = try! JSONEncoder().encode(result)
            print(String(decoding: json, as: UTF8.self))
            exit(0)
        }
        // The main run loop drains the main queue on the main thread, so the frame loop and every
        // completion run there, as in an app (dispatchMain would use another thread).
        RunLoop.main.run()
        exit(1)
    }

    @MainActor
    private static func measure(loader: String) async -> ScrollResult {
        let layout = ScrollLayout(folder: fixtures)
        let meter = DecodeMeter()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aic-scroll-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let makeRow: (ScrollLayout.Row) -> any ScrollRowImage
        if loader == "ours" {
            var configuration = ImageStore.Configuration(name: "scroll")
            configuration.rootDirectory = root
            configuration.decoder = TimedDecoder(meter: meter)
            let store = try! ImageStore(configuration: configuration)
            // No prefetch yet: `startPrefetching` is not in this branch's store.
            makeRow = { ModelRowImage(row: $0, store: store) }
        } else {
            let cache = NaiveCache(countLimit: 100)
            makeRow = { NaiveRowImage(row: $0, cache: cache, meter: meter) }
        }
        let baseline = ProcessMemory.residentMB
        let outcome = await ScrollRun(layout: layout, makeRow: makeRow).run()
        // Decodes already started finish (and count) before the figures are read.
        while meter.decodesInFlight > 0 { try? await Task.sleep(for: .milliseconds(20)) }
        return ScrollResult(
            loader: loader, decodesStarted: meter.decodesStarted, decodeCPUSeconds: meter.decodeCPUSeconds,
            peakMemoryMB: ProcessMemory.peakMB - baseline,
            placeholderMeanMs: outcome.placeholders.mean * 1000,
            placeholderP95Ms: outcome.placeholders.percentile(0.95) * 1000,
            appearances: outcome.placeholders.count, leftBeforeImage: outcome.leftBeforeImage,
            frames: outcome.frames, lateFrames: outcome.lateFrames, onMainThread: Thread.isMainThread)
    }

    private static func printTable(ours: ScrollResult, naive: ScrollResult) {
        print(
            """

            scroll: \(ScrollLayout.rowCount) rows of local JPEGs (2400x1600 photos at 954x636 px, 460 px avatars \
            at 120 px shared between rows, 120x80 images), scale 3, cold caches
            \(ScrollRun.flings().count) flings (20 down, 10 up), \(ScrollRun.framesPerFling) decaying frames + \
            \(ScrollRun.restFrames) at rest each, \(ScrollRun.framesPerSecond) fps on the main run loop \
            (main thread: ours \(ours.onMainThread), naive \(naive.onMainThread)); no prefetch
            """)
        let header = column("", 26) + column("ours", 12) + column("naive", 12) + column("ours/naive", 12) + "goal"
        print(header)
        func row(_ name: String, _ ours: Double, _ naive: Double, digits: Int, goal: Double?) {
            let ratio = ours / naive
            var line =
                column(name, 26) + column(format(ours, digits: digits), 12) + column(format(naive, digits: digits), 12)
            line += column(format(ratio, digits: 2), 12)
            if let goal { line += "<= \(format(goal, digits: 1)) " + (ratio <= goal ? "met" : "MISSED") }
            print(line)
        }
        row("decodes started", Double(ours.decodesStarted), Double(naive.decodesStarted), digits: 0, goal: nil)
        row("decode CPU (s)", ours.decodeCPUSeconds, naive.decodeCPUSeconds, digits: 2, goal: 0.5)
        row("peak memory (MB)", ours.peakMemoryMB, naive.peakMemoryMB, digits: 0, goal: 0.6)
        row("placeholder mean (ms)", ours.placeholderMeanMs, naive.placeholderMeanMs, digits: 0, goal: 0.7)
        row("placeholder p95 (ms)", ours.placeholderP95Ms, naive.placeholderP95Ms, digits: 0, goal: 0.7)
        row("row appearances", Double(ours.appearances), Double(naive.appearances), digits: 0, goal: nil)
        row(
            "left before their image", Double(ours.leftBeforeImage), Double(naive.leftBeforeImage), digits: 0, goal: nil
        )
        row("late frames", Double(ours.lateFrames), Double(naive.lateFrames), digits: 0, goal: nil)
        print(
            """
            Placeholder time: from the frame a row appears to the frame its image is set, counted in whole \
            frames (\(1000 / ScrollRun.framesPerSecond) ms); a row that left before its image counts the time \
            it was visible. Peak memory: VmHWM minus VmRSS before the flings, each loader in its own process.
            """)
    }
}
