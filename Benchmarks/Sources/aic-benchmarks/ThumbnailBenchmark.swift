#if canImport(VipsReference)
import AsyncImageCache
import Foundation
import VipsReference

/// `aic-benchmarks thumbnails PHOTOS_FOLDER --aic PATH`: our thumbnails against libvips's, side by side
/// in one run, as one table (the goals of issue 3, item 8).
///
/// - In process: `store.image(for: ImageRequest(url: file, targetWidth: W))` on a fresh store each time
///   against `vips_thumbnail(file, W)` with the pixels written to memory, rounds interleaved (ours,
///   libvips, ours, ...), medians reported. Both read the file themselves; both may use every core.
///   A second row per case starts both from the file's bytes already in memory.
/// - Peak memory: one fresh child process per measurement (see ``PeakMemory``).
/// - Batch: see ``BatchBenchmark``.
enum ThumbnailBenchmark {
    struct InProcessCase {
        let name: String
        let file: URL
        let width: Int
        let goalRatio: Double?
        /// The JPEG's width, for ``vipsShrinkAtOursScale``; `nil` for another format.
        var jpegWidth: Int? = nil

        /// The shrink-on-load that decodes at least the pixels ours decodes, when libvips's own choice
        /// decodes more: ours takes the smallest DCT scale of M/8 whose width covers the target, where
        /// `vips_thumbnail` keeps a reduce of at least 2x after its shrink (1, 2, 4 or 8) for quality, so
        /// at 2400 -> 954 px it decodes the whole photo and ours a quarter of its pixels.
        var vipsShrinkAtOursScale: Int? {
            guard let jpegWidth else { return nil }
            let eighths = (1...8).first { (jpegWidth * $0 + 7) / 8 >= width } ?? 8
            let ours = [8, 4, 2, 1].first { 8 / $0 >= eighths } ?? 1
            let vips = [8, 4, 2].first { jpegWidth / $0 >= 2 * width } ?? 1
            return ours > vips ? ours : nil
        }
    }

    static func run(photos: URL, aic: String, rounds: Int) async throws {
        guard vips_reference_start() == 0 else { throw BenchmarkFailure("libvips: \(lastVipsError())") }
        let cases = [
            InProcessCase(
                name: "2400x1600 -> 954 px", file: photos.appendingPathComponent("photo-2400x1600.jpg"),
                width: 954, goalRatio: 0.6, jpegWidth: 2400),
            InProcessCase(
                name: "8000x6000 -> 320 px", file: photos.appendingPathComponent("photo-8000x6000.jpg"),
                width: 320, goalRatio: 0.85, jpegWidth: 8000),
            // No goal in issue 3: PNG has no reduced-size decode, so this shows the resize done row by row.
            InProcessCase(
                name: "8000x6000 PNG -> 320 px", file: photos.appendingPathComponent("photo-8000x6000.png"),
                width: 320, goalRatio: nil),
        ]
        var table = ResultTable()
        for benchmark in cases {
            let contest = try await compare(benchmark, rounds: rounds)
            table.add(
                benchmark.name + " (in process, file)", ours: contest.median("ours"),
                reference: contest.median("vips"), goalRatio: benchmark.goalRatio)
            table.add(
                benchmark.name + " (in process, bytes)", ours: contest.median("ours, bytes"),
                reference: contest.median("vips, bytes"), goalRatio: benchmark.goalRatio)
            if let shrink = benchmark.vipsShrinkAtOursScale {
                table.add(
                    benchmark.name + " (file; libvips at 1/\(shrink), ours' decode scale)",
                    ours: contest.median("ours"),
                    reference: contest.median("vips, ours' scale"), goalRatio: nil)
            }
        }

        let memoryRounds = max(3, min(rounds, 5))
        for (large, goal) in [(cases[1], 20.0), (cases[2], nil)] {
            var memory = Contest()
            for _ in 0..<memoryRounds {
                for tool in ["ours", "vips"] {
                    memory.record(
                        tool,
                        try PeakMemory.measureInChild(
                            tool: tool, file: large.file, width: large.width, warmUp: cases[0].file))
                }
            }
            table.addMemory(
                large.name + " peak memory growth", ours: memory.median("ours"), reference: memory.median("vips"),
                goalMegabytes: goal)
        }

        let batch = try BatchBenchmark.run(folder: photos.appendingPathComponent("batch"), aic: aic, rounds: rounds)
        table.add(batch.name, ours: batch.ours, reference: batch.vips, goalRatio: 0.6)
        table.print()
        Swift.print(
            """

            In process: medians of \(rounds) interleaved rounds, one fresh store per call. "file": ours \
            `store.image(for:)` on the file URL against `vips_thumbnail(file)`, file reading included; "bytes": \
            the same from the file's bytes already in memory (`vips_thumbnail_buffer`). Peak memory: median of \
            \(memoryRounds) fresh child processes each; growth = VmHWM after the thumbnail - VmRSS before it, with \
            the file's bytes already loaded (not counted) and the tool warmed up on the small photo first (its \
            libraries, thread pools). Batch: \(batch.description)
            """)
    }

    /// Interleaved rounds of one case, in milliseconds: each tool from the file, and from its bytes
    /// already in memory (ours through a loader that hands them over, libvips through
    /// `vips_thumbnail_buffer`), which leaves out how each reads a file.
    static func compare(_ benchmark: InProcessCase, rounds: Int) async throws -> Contest {
        let data = try Data(contentsOf: benchmark.file)
        var contest = Contest()
        // One untimed call each first: page cache, lazy binding, thread pools.
        _ = try await ours(benchmark)
        _ = try vips(benchmark)
        let shrink = benchmark.vipsShrinkAtOursScale
        if let shrink { _ = try vips(benchmark, shrink: shrink) }
        for _ in 0..<rounds {
            contest.record("ours", try await ours(benchmark))
            contest.record("vips", try vips(benchmark))
            if let shrink { contest.record("vips, ours' scale", try vips(benchmark, shrink: shrink)) }
            contest.record("ours, bytes", try await ours(data, width: benchmark.width))
            contest.record("vips, bytes", try vips(data, width: benchmark.width))
        }
        return contest
    }

    static func ours(_ data: Data, width: Int) async throws -> Double {
        let store = try ImageStore(configuration: configuration(loader: LoadedBytes(data: data)))
        let request = ImageRequest(url: URL(fileURLWithPath: "/loaded-bytes.jpg"), targetWidth: CGFloat(width))
        let clock = ContinuousClock()
        let start = clock.now
        let image = try await store.image(for: request)
        let elapsed = clock.now - start
        try expectWidth(Int(image.pixelSize.width), width, "ours")
        return milliseconds(elapsed)
    }

    static func vips(_ data: Data, width: Int) throws -> Double {
        try timedVips(width: width, "libvips") { resultWidth, resultHeight in
            data.withUnsafeBytes { bytes in
                vips_reference_thumbnail_buffer(bytes.baseAddress, bytes.count, Int32(width), resultWidth, resultHeight)
            }
        }
    }

    /// Checked after each timed call: a thumbnail of another width would be timing other work. (libvips may
    /// round the width one pixel either way.)
    static func expectWidth(_ width: Int, _ expected: Int, _ tool: String) throws {
        guard abs(width - expected) <= 1 else {
            throw BenchmarkFailure("\(tool) made a thumbnail \(width) px wide, not \(expected)")
        }
    }

    static func ours(_ benchmark: InProcessCase) async throws -> Double {
        let store = try ImageStore(configuration: configuration())
        let clock = ContinuousClock()
        let start = clock.now
        let image = try await store.image(for: ImageRequest(url: benchmark.file, targetWidth: CGFloat(benchmark.width)))
        let elapsed = clock.now - start
        try expectWidth(Int(image.pixelSize.width), benchmark.width, "ours")
        return milliseconds(elapsed)
    }

    static func vips(_ benchmark: InProcessCase) throws -> Double {
        try timedVips(width: benchmark.width, "libvips") {
            vips_reference_thumbnail_file(benchmark.file.path, Int32(benchmark.width), $0, $1)
        }
    }

    /// libvips's thumbnail steps with the decode at `1/shrink`: shrink-on-load, then Lanczos 3 to the width.
    static func vips(_ benchmark: InProcessCase, shrink: Int) throws -> Double {
        try timedVips(width: benchmark.width, "libvips at 1/\(shrink)") {
            vips_reference_resize_after_shrink_load(
                benchmark.file.path, Int32(shrink), Int32(benchmark.width), $0, $1)
        }
    }

    /// Times `call`, one of the VipsReference functions, which stores its result's size through the two
    /// pointers it is given; in milliseconds, once the call succeeded with a thumbnail `width` wide.
    static func timedVips(
        width: Int, _ tool: String, _ call: (UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int32>) -> Int32
    ) throws -> Double {
        var (resultWidth, resultHeight): (Int32, Int32) = (0, 0)
        let clock = ContinuousClock()
        let start = clock.now
        let status = call(&resultWidth, &resultHeight)
        let elapsed = clock.now - start
        guard status == 0 else { throw BenchmarkFailure("libvips: \(lastVipsError())") }
        try expectWidth(Int(resultWidth), width, tool)
        return milliseconds(elapsed)
    }

    /// A store for one call: file URLs never reach its disk tier, so its folder stays empty.
    static func configuration(loader: (any DataLoading)? = nil) -> ImageStore.Configuration {
        var configuration = ImageStore.Configuration(name: "thumbnail-benchmark")
        configuration.rootDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("aic-benchmarks-\(getpid())", isDirectory: true)
        if let loader { configuration.dataLoader = loader }
        return configuration
    }

    static func lastVipsError() -> String {
        String(cString: vips_reference_error()).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

#endif
