import Foundation

// aic-benchmarks [sizes|memory|all] [--rounds N]
// aic-benchmarks scroll [--runs N] [--loader ours|naive]
// aic-benchmarks thumbnails PHOTOS_FOLDER --aic PATH [--rounds N]   (scripts/benchmark-thumbnails runs it)
// aic-benchmarks thumb-stages FILE WIDTH [--rounds N]              (one thumbnail, step by step)
// aic-benchmarks thumb-once ours|vips FILE WIDTH WARMUP_FILE         (a child of `thumbnails`)
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "scroll" {
    if let index = arguments.firstIndex(of: "--loader"), index + 1 < arguments.count {
        ScrollBenchmark.runChild(loader: arguments[index + 1])
    }
    var runs = 3
    if let index = arguments.firstIndex(of: "--runs"), index + 1 < arguments.count,
        let value = Int(arguments[index + 1])
    {
        runs = max(1, value)
    }
    print("command: swift run -c release --package-path Benchmarks aic-benchmarks scroll --runs \(runs)")
    do {
        try ScrollBenchmark.runBoth(runs: runs)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("aic-benchmarks: \(error)\n".utf8))
        exit(1)
    }
}
var rounds = 10
if let index = arguments.firstIndex(of: "--rounds"), index + 1 < arguments.count, let value = Int(arguments[index + 1])
{
    rounds = max(1, value)
    arguments.removeSubrange(index...(index + 1))
}
let which = arguments.first ?? "all"
do {
    switch which {
    #if canImport(VipsReference)
    case "thumb-once":
        try await PeakMemory.childMain(Array(arguments.dropFirst()))
    case "thumb-stages":
        guard arguments.count == 3, let width = Int(arguments[2]) else {
            throw BenchmarkFailure("usage: aic-benchmarks thumb-stages FILE WIDTH [--rounds N]")
        }
        try await ThumbnailStages.run(file: URL(fileURLWithPath: arguments[1]), width: width, rounds: rounds)
    case "thumbnails":
        guard arguments.count == 4, arguments[2] == "--aic" else {
            throw BenchmarkFailure("usage: aic-benchmarks thumbnails PHOTOS_FOLDER --aic PATH [--rounds N]")
        }
        try await ThumbnailBenchmark.run(photos: URL(fileURLWithPath: arguments[1]), aic: arguments[3], rounds: rounds)
    #endif
    default:
        print("command: swift run -c release --package-path Benchmarks aic-benchmarks \(which) --rounds \(rounds)")
        if which == "sizes" || which == "all" { try SizeLookupBenchmark.run(rounds: rounds) }
        if which == "memory" || which == "all" { MemoryCacheBenchmark.run(rounds: rounds) }
    }
} catch {
    FileHandle.standardError.write(Data("aic-benchmarks: \(error)\n".utf8))
    exit(1)
}
