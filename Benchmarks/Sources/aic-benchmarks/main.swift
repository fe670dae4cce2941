import Foundation

// aic-benchmarks [sizes|memory|all] [--rounds N]
// aic-benchmarks scroll [--loader ours|naive]
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "scroll" {
    if let index = arguments.firstIndex(of: "--loader"), index + 1 < arguments.count {
        ScrollBenchmark.runChild(loader: arguments[index + 1])
    }
    print("command: swift run -c release --package-path Benchmarks aic-benchmarks scroll")
    do {
        try ScrollBenchmark.runBoth()
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("aic-benchmarks: \(error)\n".utf8))
        exit(1)
    }
}
var rounds = 10
if let index = arguments.firstIndex(of: "--rounds"), index + 1 < arguments.count, let value = Int(arguments[index + 1]) {
    rounds = max(1, value)
    arguments.removeSubrange(index...(index + 1))
}
let which = arguments.first ?? "all"
print("command: swift run -c release --package-path Benchmarks aic-benchmarks \(which) --rounds \(rounds)")
do {
    if which == "sizes" || which == "all" { try SizeLookupBenchmark.run(rounds: rounds) }
    if which == "memory" || which == "all" { MemoryCacheBenchmark.run(rounds: rounds) }
} catch {
    FileHandle.standardError.write(Data("aic-benchmarks: \(error)\n".utf8))
    exit(1)
}
