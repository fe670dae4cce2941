#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A long-running app in a few seconds: about a thousand loads of every kind through one store, then the
/// process-wide figures a leak would move. An exit test, so that no other test's threads, sockets or
/// memory are counted.
@Suite("Soak: resources over a long run")
struct ImageStoreSoakTests {
    static let memoryByteLimit = 2 << 20

    /// Open file descriptors of this process.
    static func descriptorCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// Threads of this process.
    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    /// Waits (up to 10 s) for `condition`; whether it became true.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    /// Measured: descriptors back to their count from before the store was made once it is released
    /// (after 404s, cut-short bodies, timeouts, cancellations, prefetches stopped halfway, `removeAll()`,
    /// `clearMemory()` and its folder deleted under it); at most 48 threads more than before at any
    /// point (no thread per load); the in-flight runs, decode slots, HTTP tasks, prefetches and bytes
    /// waiting for a decode all empty at the end; the memory tiers within their budgets and the size
    /// memo and HTTP metadata within 10,000 entries; peak resident memory up by less than both memory
    /// tiers' budgets plus 64 MiB; and the store and its HTTP loader freed once the last reference goes.
    @Test func aThousandLoadsOfEveryKindLeaveNoDescriptorThreadOrRunBehindAndFreeTheStore() async {
        await #expect(processExitsWith: .success) {
            let folder = TemporaryDirectory("soak")
            let sizes = (0..<4).map { PixelSize(width: 120 + $0 * 16, height: 90 + $0 * 12) }
            let names = try SampleImages.writeJPEGs(sizes, into: folder.url)
            let server = try await TestHTTPServer(serving: folder.url)
            defer { server.stop() }
            func makeStore(_ name: String) throws -> ImageStore {
                try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"), name: name) {
                    $0.memoryCountLimit = 30
                    $0.memoryByteLimit = Self.memoryByteLimit
                    $0.diskByteLimit = 512 << 10
                    $0.dataLoader = DataLoader(timeout: 1)
                }
            }
            // Lazily made process-wide state (libcurl, dispatch's pools) is not a leak: made by a first
            // store, released before the counts are taken.
            do {
                let warmUp = try makeStore("warm-up")
                _ = try await warmUp.image(for: ImageRequest(url: server.url("/images/\(names[0])"), targetWidth: 40))
                _ = try? await warmUp.image(for: ImageRequest(url: server.url("/status/404"), targetWidth: 40))
            }
            try await Task.sleep(for: .milliseconds(300))  // the released session closes its connections
            let descriptorsBefore = Self.descriptorCount()
            let threadsBefore = Self.threadCount()

            weak var weakStore: ImageStore?
            weak var weakLoader: HTTPDataLoader?
            try await PeakMemory.expectGrowth(belowMiB: 2 * (Self.memoryByteLimit >> 20) + 64, "soak") {
                let store = try makeStore("soak")
                weakStore = store
                weakLoader = (store.configuration.dataLoader as? DataLoader)?.http
                let png = try SampleImages.png(width: 20, height: 10).base64EncodedString()
                var mostThreads = 0
                for round in 0..<50 {
                    await withTaskGroup(of: Void.self) { group in
                        var urls = (0..<8).map { server.url("/alias/\(round * 8 + $0)/images/\(names[$0 % 4])") }
                        urls.append(folder.url.appendingPathComponent(names[round % 4]))
                        urls.append(URL(string: "data:image/png;n=\(round);base64,\(png)")!)
                        urls.append(server.url("/status/404?\(round)"))
                        urls.append(server.url("/truncated/images/\(names[0])?\(round)"))
                        if round % 25 == 0 { urls.append(server.url("/slow/2500/images/\(names[0])?\(round)")) }
                        for url in urls {
                            group.addTask { _ = try? await store.image(for: ImageRequest(url: url, targetWidth: 48)) }
                        }
                        let cancelled = server.url("/slow/300/images/\(names[1])?\(round)")
                        let task = Task { try await store.image(for: ImageRequest(url: cancelled, targetWidth: 48)) }
                        group.addTask {
                            try? await Task.sleep(for: .milliseconds(20))
                            task.cancel()
                        }
                        let prefetches = (0..<4).map {
                            ImageRequest(
                                url: server.url("/alias/\(100_000 + round * 4 + $0)/images/\(names[$0])"),
                                targetWidth: 40)
                        }
                        store.startPrefetching(prefetches)
                        store.stopPrefetching(Array(prefetches.prefix(2)))
                    }
                    if round % 10 == 9 { store.clearMemory() }
                    if round % 20 == 19 { store.removeAll() }
                    if round == 30 { try? FileManager.default.removeItem(at: store.directory) }
                    mostThreads = max(mostThreads, Self.threadCount())
                }
                store.stopPrefetching()
                let idle = await Self.eventually {
                    store.variantRuns.count + store.fetchRuns.count + store.decodeSlots.busyCount
                        + store.decodeSlots.waitingCount + (weakLoader?.unfinishedTaskCount ?? 0)
                        + store.prefetches.withLock { $0.running.count } + store.revalidating.withLock { $0.count }
                        + store.decodingOriginals.withLock { $0.count } == 0
                }
                precondition(idle, "work left in flight")
                store.waitForDiskMaintenance()
                precondition(
                    mostThreads <= threadsBefore + 48, "\(threadsBefore) threads before, \(mostThreads) at most")
                precondition(store.variants.count <= 30 && store.variants.totalCost <= Self.memoryByteLimit)
                precondition(store.originals.count <= 30 && store.originals.totalCost <= Self.memoryByteLimit)
                precondition(store.sizeMemo.count <= 10_000 && store.cacheMetadata.count <= 10_000)
                let statistics = store.statistics
                precondition(statistics.decodes >= 400 && statistics.failures >= 100, "\(statistics)")
            }
            let released = await Self.eventually { weakStore == nil && weakLoader == nil }
            precondition(released, "the store or its loader outlived its last reference")
            let descriptorsClosed = await Self.eventually { Self.descriptorCount() <= descriptorsBefore }
            precondition(descriptorsClosed, "\(descriptorsBefore) descriptors before, \(Self.descriptorCount()) after")
        }
    }
}
#endif
