@_spi(Benchmarks) import AsyncImageCache
import Foundation

/// `aic-benchmarks scroll`: the same 30 flings through seed 003's list of local JPEGs, once with our
/// store through ``CachedImageModel`` (prefetching the next screenful, as a list does) and once with
/// seed 002's naive loader (no prefetching), each in its own process so their peak memory compares,
/// `--runs` times alternating which goes first; then a table of medians against the goals.
enum ScrollBenchmark {
    static let fixtures = FileManager.default.temporaryDirectory.appendingPathComponent("aic-scroll-fixtures-v1")

    /// The parent: writes the files once, runs both loaders as children `runs` times, alternating
    /// which goes first, and prints the median of each figure.
    static func runBoth(runs: Int) throws {
        print("writing fixtures into \(fixtures.path) (reused on later runs)...")
        try ScrollLayout.prepareFiles(in: fixtures)
        var (ours, naive): ([ScrollResult], [ScrollResult]) = ([], [])
        for run in 0..<runs {
            for loader in run % 2 == 0 ? ["ours", "naive"] : ["naive", "ours"] {
                let result = try spawnChild(loader: loader)
                if loader == "ours" { ours.append(result) } else { naive.append(result) }
            }
            print("run \(run + 1) of \(runs) done")
        }
        printTable(ours: ours, naive: naive)
    }

    private static func spawnChild(loader: String) throws -> ScrollResult {
        let data: Data
        do {
            data = try runCommand(["/proc/self/exe", "scroll", "--loader", loader])
        } catch {
            throw BenchmarkFailure("scroll --loader \(loader) failed: \(error)")
        }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        guard let result = try? JSONDecoder().decode(ScrollResult.self, from: Data(line.utf8)) else {
            throw BenchmarkFailure("scroll --loader \(loader) printed no result: \(line)")
        }
        return result
    }

    /// The child: runs one loader on the main run loop, prints its result as JSON and exits.
    static func runChild(loader: String) -> Never {
        // Run by hand before a parent wrote the files, every load would fail and the figures mean nothing.
        guard FileManager.default.fileExists(atPath: fixtures.appendingPathComponent("complete").path) else {
            FileHandle.standardError.write(
                Data("no fixtures in \(fixtures.path): run `aic-benchmarks scroll` once to write them\n".utf8))
            exit(2)
        }
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
        // Read before either loader is made, at the same point in both processes: what making the store
        // costs (about 5 MB more than the naive cache) is ours too.
        let baseline = ProcessMemory.residentMB
        let layout = ScrollLayout(folder: fixtures)
        let meter = DecodeMeter()
        let decodeStarts = DecodeStarts()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aic-scroll-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var run: ScrollRun
        var store: ImageStore?
        var latency: (wait: [Double], decodeToFrame: [Double], before: Int) = ([], [], 0)
        if loader == "ours" {
            var configuration = ImageStore.Configuration(name: "scroll")
            configuration.rootDirectory = root
            configuration.stageObserver = { stage, url in if stage == .decode { decodeStarts.record(url) } }
            let ours = try! ImageStore(configuration: configuration)
            store = ours
            run = ScrollRun(layout: layout) { ModelRowImage(row: $0, store: ours) }
            let prefetcher = ScrollPrefetcher(layout: layout, store: ours)
            run.onFrame = { prefetcher.update(offset: $0, velocity: $1) }
            run.onHydrated = { index, appeared in
                // Rows drawn at once from memory have no decode of their own to split.
                guard let start = decodeStarts.latest(for: layout.rows[index].file) else { return }
                let now = ContinuousClock.now
                if start < appeared {
                    latency.before += 1
                } else {
                    latency.wait.append((start - appeared).seconds)
                    latency.decodeToFrame.append((now - start).seconds)
                }
            }
        } else {
            let cache = NaiveCache(countLimit: 100)
            run = ScrollRun(layout: layout) { NaiveRowImage(row: $0, cache: cache, meter: meter) }
        }
        let offMainBefore = ThreadCPU.processSeconds() - ThreadCPU.seconds()
        let systemBefore = ThreadCPU.otherThreadsSystemSeconds()
        let outcome = await run.run()
        store?.stopPrefetching()
        // Work already started finishes (and counts) before the figures are read: wait until the
        // other threads stop using CPU.
        var offMain = ThreadCPU.processSeconds() - ThreadCPU.seconds()
        while true {
            try? await Task.sleep(for: .milliseconds(100))
            let now = ThreadCPU.processSeconds() - ThreadCPU.seconds()
            defer { offMain = now }
            if meter.decodesInFlight == 0 && now - offMain < 0.002 { break }
        }
        // Read before the floors below, which hold every file and a decode of their own.
        let peakMemoryMB = ProcessMemory.peakMB - baseline
        let decodeSystemSeconds = ThreadCPU.otherThreadsSystemSeconds() - systemBefore
        let floors = store.map { _ in Self.floors(layout) }
        return ScrollResult(
            loader: loader, decodesStarted: store?.statistics.decodes ?? meter.decodesStarted,
            decodeCPUSeconds: offMain - offMainBefore,
            decodeSystemSeconds: decodeSystemSeconds, peakMemoryMB: peakMemoryMB,
            placeholderMeanMs: outcome.placeholders.mean * 1000,
            placeholderP95Ms: outcome.placeholders.percentile(0.95) * 1000,
            appearances: outcome.placeholders.count, leftBeforeImage: outcome.leftBeforeImage,
            frames: outcome.frames, lateFrames: outcome.lateFrames,
            mainWorkMeanMs: outcome.mainWorkSeconds.mean * 1000,
            mainWorkMaxMs: (outcome.mainWorkSeconds.max() ?? .nan) * 1000, onMainThread: Thread.isMainThread,
            waitForDecodeMs: store.map { _ in latency.wait.mean * 1000 },
            decodeToFrameMs: store.map { _ in latency.decodeToFrame.mean * 1000 },
            decodedAfterAppearing: store.map { _ in latency.wait.count },
            decodedBeforeAppearing: store.map { _ in latency.before },
            libjpegAloneSeconds: floors?.libjpeg, decodeAndResizeSeconds: floors?.decodeAndResize,
            photoFullMs: floors?.photo.full, photoScaledMs: floors?.photo.scaled)
    }

    /// The CPU seconds, on this thread with the files read beforehand, that decoding each distinct
    /// image of `layout` once takes: with libjpeg alone at the DCT scale the store picks for the row's
    /// request, and with the store's own decode and resize to the row's size on one thread.
    private static func floors(_ layout: ScrollLayout) -> (
        libjpeg: Double, decodeAndResize: Double, photo: (full: Double, scaled: Double)
    ) {
        var seen = Set<URL>()
        var jobs: [(Data, ImageDecodingContext, PixelSize?)] = []
        var firstPhoto: Int?
        for row in layout.rows where seen.insert(row.file).inserted {
            guard let data = try? Data(contentsOf: row.file), let header = try? ImageHeader.parse(data),
                let width = ModelRowImage.request(for: row)?.targetPixelWidth
            else { continue }
            let size = header.displaySize
            let minimum =
                width < size.width
                ? PixelSize(
                    width: width, height: max(1, Int((Double(size.height * width) / Double(size.width)).rounded())))
                : nil
            if row.kind == .photo && firstPhoto == nil { firstPhoto = jobs.count }
            jobs.append((data, ImageDecodingContext(header: header, minimumSize: minimum), minimum))
        }
        var start = ThreadCPU.seconds()
        for (data, context, _) in jobs { blackHole(try? ImageDecoders.JPEG().decode(data, context: context)) }
        let libjpeg = ThreadCPU.seconds() - start
        start = ThreadCPU.seconds()
        for (data, context, size) in jobs {
            if let size {
                blackHole(
                    try? ImageDecoders.JPEG().benchmarkDecodeResizing(
                        data, context: context, to: size, overlapping: false))
            } else {
                blackHole(try? ImageDecoders.JPEG().decode(data, context: context))
            }
        }
        let decodeAndResize = ThreadCPU.seconds() - start
        let photo = firstPhoto.map { photoDecodeMilliseconds(data: jobs[$0].0, scaled: jobs[$0].1) } ?? (.nan, .nan)
        return (libjpeg, decodeAndResize, photo)
    }

    /// A photo decoded by libjpeg alone at full size and with `scaled`, its row's context (the DCT
    /// scale the store picks): CPU milliseconds, the median of 5 each. What stays the same between the
    /// two is entropy decoding.
    private static func photoDecodeMilliseconds(data: Data, scaled: ImageDecodingContext) -> (
        full: Double, scaled: Double
    ) {
        func median(_ context: ImageDecodingContext) -> Double {
            let times = (0..<5).map { _ in
                let start = ThreadCPU.seconds()
                blackHole(try? ImageDecoders.JPEG().decode(data, context: context))
                return (ThreadCPU.seconds() - start) * 1000
            }
            return times.sorted()[2]
        }
        return (median(ImageDecodingContext(header: scaled.header)), median(scaled))
    }

    private static func printTable(ours runsOfOurs: [ScrollResult], naive runsOfNaive: [ScrollResult]) {
        func median(_ results: [ScrollResult], _ figure: (ScrollResult) -> Double?) -> Double {
            let values = results.compactMap(figure).sorted()
            guard !values.isEmpty else { return .nan }
            return values.count % 2 == 1
                ? values[values.count / 2] : (values[values.count / 2 - 1] + values[values.count / 2]) / 2
        }
        let (ours, naive) = (runsOfOurs[0], runsOfNaive[0])
        print(
            """

            scroll: \(ScrollLayout.rowCount) rows of local JPEGs (2400x1600 photos at 954x636 px, 460 px avatars \
            at 120 px shared between rows, 120x80 images), scale 3, cold caches
            \(ScrollRun.flings().count) flings (20 down, 10 up), \(ScrollRun.framesPerFling) decaying frames + \
            \(ScrollRun.restFrames) at rest each, \(ScrollRun.framesPerSecond) fps on the main run loop \
            (main thread: ours \(ours.onMainThread), naive \(naive.onMainThread))
            ours prefetches the next screenful in the scroll direction through startPrefetching, with the rows' own \
            requests, and stops rows 2 screens away; the naive loader (seed 002) has no prefetching
            median of \(runsOfOurs.count) runs, ours and naive in alternating child processes
            """)
        let header = column("", 32) + column("ours", 12) + column("naive", 12) + column("ours/naive", 12) + "goal"
        print(header)
        func row(
            _ name: String, _ figure: (ScrollResult) -> Double?, digits: Int, goal: Double?,
            ratio showsRatio: Bool = true
        ) {
            let (ours, naive) = (median(runsOfOurs, figure), median(runsOfNaive, figure))
            let ratio = ours / naive
            func shown(_ value: Double) -> String { value.isNaN ? "-" : format(value, digits: digits) }
            var line = column(name, 32) + column(shown(ours), 12) + column(shown(naive), 12)
            line += column(showsRatio ? (ratio.isNaN ? "-" : format(ratio, digits: 2)) : "", 12)
            if let goal { line += "<= \(format(goal, digits: 1)) " + (ratio <= goal ? "met" : "MISSED") }
            print(line)
        }
        row("decodes started", { Double($0.decodesStarted) }, digits: 0, goal: nil)
        row("decode CPU (s)", { $0.decodeCPUSeconds }, digits: 2, goal: 0.5)
        row("  of which system (s)", { $0.decodeSystemSeconds }, digits: 2, goal: nil)
        row("peak memory (MB)", { $0.peakMemoryMB }, digits: 0, goal: 0.6)
        row("placeholder mean (ms)", { $0.placeholderMeanMs }, digits: 0, goal: 0.7)
        row("placeholder p95 (ms)", { $0.placeholderP95Ms }, digits: 0, goal: 0.7)
        row("row appearances", { Double($0.appearances) }, digits: 0, goal: nil)
        row("left before their image", { Double($0.leftBeforeImage) }, digits: 0, goal: nil)
        row("late frames", { Double($0.lateFrames) }, digits: 0, goal: nil)
        row("main thread/frame mean (ms)", { $0.mainWorkMeanMs }, digits: 2, goal: nil)
        row("main thread/frame max (ms)", { $0.mainWorkMaxMs }, digits: 1, goal: nil)
        row(
            "ours: decoded before appearing", { $0.decodedBeforeAppearing.map(Double.init) }, digits: 0, goal: nil,
            ratio: false)
        row(
            "ours: decoded after appearing", { $0.decodedAfterAppearing.map(Double.init) }, digits: 0, goal: nil,
            ratio: false)
        row("  appear -> decode start (ms)", { $0.waitForDecodeMs }, digits: 1, goal: nil, ratio: false)
        row("  decode start -> frame (ms)", { $0.decodeToFrameMs }, digits: 1, goal: nil, ratio: false)
        let floor = median(runsOfOurs) { $0.libjpegAloneSeconds }
        let naiveCPU = median(runsOfNaive) { $0.decodeCPUSeconds }
        print(
            column("ours' floor: libjpeg alone (s)", 32) + column(format(floor, digits: 2), 12) + column("", 12)
                + column(format(floor / naiveCPU, digits: 2), 12) + "(of naive's decode CPU)")
        let steps = median(runsOfOurs) { $0.decodeAndResizeSeconds }
        print(
            column("  + resize, one thread (s)", 32) + column(format(steps, digits: 2), 12) + column("", 12)
                + column(format(steps / naiveCPU, digits: 2), 12) + "(of naive's decode CPU)")
        print(
            """
            Placeholder time: from the frame a row appears to the frame its image is set, counted in whole \
            frames (\(1000 / ScrollRun.framesPerSecond) ms); a row that left before its image counts the time \
            it was visible. Decode CPU: CPU time of every thread but the main one (reads, decodes, resizes; ours \
            with its real decoder, so a visible load's decode and resize count on both of their threads; a \
            prefetch uses one), until the loads already started finish; the frame clock is a timer on the main \
            run loop, so its wake-ups count on the main thread, as a display link's do; of which system: the \
            kernel's part (first touches of fresh memory, file reads, thread wake-ups), which moves with the \
            machine from run to run. Main thread/frame: the frame loop's CPU time making, updating and \
            dropping rows (and, for ours, prefetching). Peak memory: VmHWM minus VmRSS before the loader is \
            made, each loader in its own process. Ours' floor: after the flings, libjpeg decoding each distinct \
            image once at the DCT scale the store picks for its row, bytes already read, nothing else; + resize: \
            the store's own decode and resize of the same images on one thread, as it runs when every core is \
            busy. Entropy decoding, most of a JPEG decode, costs the same at every scale (one 2400x1600 photo in \
            this run: \
            \(format(median(runsOfOurs) { $0.photoFullMs }, digits: 1)) ms full, \
            \(format(median(runsOfOurs) { $0.photoScaledMs }, digits: 1)) ms at the scale its row takes).
            """)
    }
}
