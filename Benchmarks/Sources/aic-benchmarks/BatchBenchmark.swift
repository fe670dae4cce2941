import Foundation

/// `aic thumbnail` over a folder of photos against `vipsthumbnail` over the same files: wall time of
/// the whole batch, one process each, rounds interleaved, medians in milliseconds.
///
/// Both tools take every file in one invocation, scale each to the same width and write PNGs, so the
/// comparison is one process against one process doing the same work; each may use every core.
enum BatchBenchmark {
    struct Result {
        let name: String
        let ours: Double
        let vips: Double
        let description: String
    }

    static let width = 320

    static func run(folder: URL, aic: String, rounds: Int) throws -> Result {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".jpg") }.sorted().map { folder.appendingPathComponent($0).path }
        guard !files.isEmpty else { throw BenchmarkFailure("no .jpg files in \(folder.path)") }
        let output = FileManager.default.temporaryDirectory
            .appendingPathComponent("aic-benchmarks-batch-\(getpid())", isDirectory: true)
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: output) }

        let ours = [aic, "thumbnail"] + files + ["--width", String(width), "--output-dir", output.path]
        let vips = ["vipsthumbnail"] + files + ["--size", "\(width)x", "-o", output.path + "/%s.png"]
        var contest = Contest()
        // One untimed run each: page cache and the dynamic loader.
        _ = try time(ours)
        _ = try time(vips)
        for _ in 0..<rounds {
            contest.record("ours", try time(ours))
            contest.record("vips", try time(vips))
        }
        return Result(
            name: "batch of \(files.count) -> \(width) px PNG (processes)",
            ours: contest.median("ours"), vips: contest.median("vips"),
            description: "`aic thumbnail FILES --width \(width) --output-dir DIR` against `vipsthumbnail FILES "
                + "--size \(width)x -o DIR/%s.png`, one process each, wall time, medians of \(rounds) "
                + "interleaved rounds.")
    }

    /// Runs a command line to completion, its stdout on `/dev/null`, and returns its wall time in
    /// milliseconds.
    private static func time(_ command: [String]) throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try runCommand(command, discardingOutput: true)
        } catch {
            throw BenchmarkFailure("\(command.prefix(2).joined(separator: " ")) ...: \(error)")
        }
        return milliseconds(clock.now - start)
    }
}
