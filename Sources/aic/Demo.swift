import AsyncImageCache
import Foundation

/// `aic demo`: the sample set through the store three times (cold, warm, after a relaunch with the
/// server gone), with what each tier did.
enum Demo: Subcommand {
    static let width = 320
    static let radius = 16

    static let name = "demo"
    static let summary = "push the built-in sample set through the store and show what each tier did"
    static let synopsis = "aic [demo] [--keep]"
    static let details = """
        The demo serves a generated sample set from a loopback HTTP server and loads it three times at
        \(width) px with \(radius) px corners: cold, warm (memory hits), and after a relaunch with the server
        stopped (disk hits). It uses its own store in a temporary folder, never the user's cache.

        OPTIONS
          --keep    keep the temporary folder with the thumbnails and the cache (default: remove it)

        EXAMPLES
          aic
          aic demo --keep
        """
    static let options: Set<String> = []
    static let flags: Set<String> = ["--keep"]

    static func run(_ arguments: Arguments) async throws {
        guard arguments.positionals.isEmpty else { throw UsageError("demo takes no arguments") }
        try await run(keepFiles: arguments.flag("--keep"))
    }

    static func run(keepFiles: Bool) async throws {
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("aic-demo-\(getpid())")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        defer { if !keepFiles { try? FileManager.default.removeItem(at: workspace) } }

        print("Making the sample set...")
        let samples = try SampleSet.make()
        let server = try LoopbackServer(files: Dictionary(uniqueKeysWithValues: samples.items.map { ("/\($0.name)", $0.data) }))
        let urls = samples.items.map { server.url("/\($0.name)") }
        var configuration = ImageStore.Configuration(name: "aic-demo")
        configuration.rootDirectory = workspace.appendingPathComponent("cache")

        var rows: [(String, ImageStore.Statistics, Int, Duration)] = []
        let store = try ImageStore(configuration: configuration)
        print("\nPass 1, cold: sizes are unknown, every image is fetched over loopback HTTP and decoded at \(width) px.")
        let (cold, coldTime) = try await pass(store, urls: urls, samples: samples, printSizes: true)
        rows.append(("1 cold", cold, server.requestCount, coldTime))

        print("\nPass 2, warm, same store: every image is a memory hit.")
        let fetchesBefore = server.requestCount
        let (warm, warmTime) = try await pass(store, urls: urls, samples: samples, printSizes: false)
        rows.append(("2 warm", warm, server.requestCount - fetchesBefore, warmTime))
        store.waitForDiskMaintenance()

        server.stop()
        print("\nPass 3, relaunch: a new store with the same name, the server stopped.")
        let relaunched = try ImageStore(configuration: configuration)
        let (again, againTime) = try await pass(relaunched, urls: urls, samples: samples, printSizes: true)
        rows.append(("3 relaunch", again, 0, againTime))

        printTable(rows)
        let output = workspace.appendingPathComponent("thumbnails")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        for (item, url) in zip(samples.items, urls) {
            let image = try await relaunched.image(for: ImageRequest(url: url, targetWidth: CGFloat(width), cornerRadius: CGFloat(radius)))
            try ImageEncoders.PNG().encode(image).write(to: output.appendingPathComponent(item.name + ".png"))
        }
        let usage = relaunched.diskUsage()
        print("\nDisk tier: \(usage.fileCount) files, \(usage.byteCount) bytes in \(relaunched.directory.path)")
        print(keepFiles ? "Thumbnails: \(output.path)" : "(run `aic demo --keep` to keep the thumbnails and the cache folder)")
    }

    private static func pass(
        _ store: ImageStore, urls: [URL], samples: SampleSet, printSizes: Bool
    ) async throws -> (ImageStore.Statistics, Duration) {
        store.resetStatistics()
        let clock = ContinuousClock()
        let start = clock.now
        for (item, url) in zip(samples.items, urls) {
            let sizeBefore = store.cachedPixelSize(for: url)
            let image = try await store.image(for: ImageRequest(url: url, targetWidth: CGFloat(width), cornerRadius: CGFloat(radius)))
            if printSizes {
                let known = sizeBefore.map { "\(Int($0.width))x\(Int($0.height)) before pixels" } ?? "unknown before pixels"
                let name = item.name.padding(toLength: 16, withPad: " ", startingAt: 0)
                let note = item.note.padding(toLength: 20, withPad: " ", startingAt: 0)
                print("  \(name) \(note) size \(known.padding(toLength: 28, withPad: " ", startingAt: 0)) -> \(image.pixelSize)")
            }
        }
        return (store.statistics, clock.now - start)
    }

    private static func printTable(_ rows: [(String, ImageStore.Statistics, Int, Duration)]) {
        print("\npass        variant  original  disk  source  http      decodes  sizes: memory  xattr  header  time")
        print("            hits     mem hits  hits  fetches requests")
        for (label, stats, requests, time) in rows {
            let milliseconds = Double(time.components.attoseconds) / 1e15 + Double(time.components.seconds) * 1000
            let columns = [
                label.padding(toLength: 11, withPad: " ", startingAt: 0),
                pad(stats.variantHits, 8), pad(stats.originalMemoryHits, 9), pad(stats.diskHits, 5),
                pad(stats.sourceFetches, 7), pad(requests, 9), pad(stats.decodes, 8),
                pad(stats.sizesFromMemory, 14), pad(stats.sizesFromAttribute, 6), pad(stats.sizesFromHeader, 7),
                String(format: "%.0f ms", milliseconds),
            ]
            print(columns.joined(separator: " "))
        }
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        String(value).padding(toLength: width, withPad: " ", startingAt: 0)
    }
}
