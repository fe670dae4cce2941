import AsyncImageCache
import Foundation

/// `aic _cache-writer`: loads URLs through a store in a given folder, several at a time, so that
/// the hardening tests can kill a process in the middle of disk writes and trims, or run two
/// processes on one folder. Not listed in `aic --help`: it is a test harness, not a user command.
enum CacheWriterCommand: Subcommand {
    static let name = "_cache-writer"
    static let summary = "(testing) load URLs through a store in a given folder"
    static let synopsis = "aic _cache-writer --root DIR [--disk-limit BYTES] [--concurrency N] URL..."
    static let details = """
        Loads every URL (64 pixels wide) through the store "writer" in DIR, N at a time (default 4),
        with a disk budget of BYTES (default 200 MiB), waits for the disk trims, then prints
        "loaded L failed F". A failed load is counted, not fatal.
        """
    static let options: Set<String> = ["--root", "--disk-limit", "--concurrency"]
    static let flags: Set<String> = []

    static func run(_ arguments: Arguments) async throws {
        let root = URL(fileURLWithPath: try arguments.required("--root"), isDirectory: true)
        let concurrency = try arguments.integer("--concurrency", default: 4, in: 1...64)
        var configuration = ImageStore.Configuration(name: "writer")
        configuration.rootDirectory = root
        configuration.diskByteLimit = try arguments.integer("--disk-limit", default: 200 << 20, in: 0...Int.max)
        let store = try ImageStore(configuration: configuration)
        let urls = try arguments.positionals.map { text in
            guard let url = URL(string: text), url.scheme != nil else { throw UsageError("not a URL: \(text)") }
            return url
        }
        let loaded = await withTaskGroup(of: Bool.self) { group in
            var next = 0
            var loaded = 0
            func startNext() {
                guard next < urls.count else { return }
                let request = ImageRequest(url: urls[next], targetWidth: 64)
                next += 1
                group.addTask { (try? await store.image(for: request)) != nil }
            }
            for _ in 0..<concurrency { startNext() }
            while let succeeded = await group.next() {
                if succeeded { loaded += 1 }
                startNext()
            }
            return loaded
        }
        store.waitForDiskMaintenance()
        Console.out("loaded \(loaded) failed \(urls.count - loaded)")
    }
}
