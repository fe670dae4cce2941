#if canImport(VipsReference)
@_spi(Benchmarks) import AsyncImageCache
import Foundation
import VipsReference

/// `aic-benchmarks thumb-stages FILE WIDTH [--rounds N]`: where the time of one in-process thumbnail
/// goes, each step timed on its own (medians), next to libvips's whole thumbnail and its shrink-on-load
/// decode alone. Not part of the goals table; it says which step to work on.
enum ThumbnailStages {
    static func run(file: URL, width: Int, rounds: Int) async throws {
        guard vips_reference_start() == 0 else {
            throw BenchmarkFailure("libvips: \(ThumbnailBenchmark.lastVipsError())")
        }
        let data = try Data(contentsOf: file)
        let header = try ImageHeader.parse(data)
        let display = header.displaySize
        let height = Int((Double(display.height) * Double(width) / Double(display.width)).rounded())
        let context = ImageDecodingContext(header: header, minimumSize: PixelSize(width: width, height: height))
        let decoded = try ImageDecoders.JPEG().decode(data, context: context)
        let benchmark = ThumbnailBenchmark.InProcessCase(name: "", file: file, width: width, goalRatio: 1)
        var contest = Contest()
        for _ in 0..<rounds {
            contest.record("read file, Data(contentsOf:)", try await time { blackHole(try Data(contentsOf: file)) })
            contest.record(
                "read file, FileDataLoader (the store's)",
                try await time {
                    blackHole(try await FileDataLoader().loadData(for: file))
                })
            contest.record("parse header", try await time { blackHole(try ImageHeader.parse(data)) })
            contest.record(
                "decode at DCT scale (\(decoded.pixelSize))",
                try await time {
                    blackHole(try ImageDecoders.JPEG().decode(data, context: context))
                })
            contest.record(
                "  the same, libjpeg alone",
                try await time {
                    blackHole(try ImageDecoders.JPEG().benchmarkDecodeWithLibjpeg(data, context: context))
                })
            if ImageDecoders.JPEG().benchmarkDecodeFromDC(data, threads: 1) != nil {
                for threads in [1, 2] {
                    contest.record(
                        "  the same, DC-only decoder, \(threads) thread\(threads == 1 ? "" : "s")",
                        try await time {
                            blackHole(ImageDecoders.JPEG().benchmarkDecodeFromDC(data, threads: threads))
                        })
                }
            }
            contest.record(
                "resize alone",
                try await time {
                    blackHole(decoded.resized(to: PixelSize(width: width, height: height)))
                })
            contest.record("store, bytes already loaded", try await ThumbnailBenchmark.ours(data, width: width))
            contest.record("store, whole", try await ThumbnailBenchmark.ours(benchmark))
            contest.record(
                "libvips shrink-on-load decode",
                try await time {
                    var size: (Int32, Int32) = (0, 0)
                    let shrink = Int32(max(1, min(8, header.storedSize.width / decoded.pixelSize.width)))
                    guard vips_reference_jpeg_shrink_load(file.path, shrink, &size.0, &size.1) == 0 else {
                        throw BenchmarkFailure("libvips: \(ThumbnailBenchmark.lastVipsError())")
                    }
                })
            contest.record("libvips thumbnail, whole", try ThumbnailBenchmark.vips(benchmark))
        }
        print("\(file.lastPathComponent) -> \(width) px, medians of \(rounds) rounds (ms)")
        for name in contest.order { print(column(name, 44), format(contest.median(name), digits: 1)) }
    }

    private static func time(_ body: () async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        return milliseconds(clock.now - start)
    }
}
#endif
