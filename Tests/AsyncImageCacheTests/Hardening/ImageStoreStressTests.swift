import Foundation
import XCTest

@testable import AsyncImageCache

/// Many loads over many URLs with random cancellation and small budgets. An XCTest case because
/// `wait(for:)` runs the main run loop on the main thread, so "on the main thread" can be checked.
/// Two thirds of the URLs are on two origins that redirect to the server with the images, so loads
/// move their fetch slots between hosts; a quarter of the loads are also prefetched and then
/// cancelled, so their runs are lowered to prefetches, some while they wait for a slot.
///
/// `AIC_STRESS_LOADS` sets the number of loads (2,000 by default; `scripts/stress` runs 10,000).
final class ImageStoreStressTests: XCTestCase {
    static let loadCount = ProcessInfo.processInfo.environment["AIC_STRESS_LOADS"].flatMap(Int.init) ?? 2_000
    static let urlCount = 500
    static let widths = [24, 32, 48]
    static let memoryCountLimit = 40
    static let memoryByteLimit = 48 * 1024
    static let diskByteLimit = 160 * 1024

    func testEveryCompletionRunsOnceOnTheMainThreadWithinBudgetsAndNothingStaysInFlight() throws {
        let folder = TemporaryDirectory("stress-images")
        let sizes = (0..<5).map { PixelSize(width: 64 + $0 * 16, height: 48 + $0 * 12) }
        let names = try SampleImages.writeJPEGs(sizes, into: folder.url)
        let server = try TestHTTPServer(blockingUntilListening: folder.url)
        defer { server.stop() }
        let origins = try (0..<2).map { _ in try TestHTTPServer(blockingUntilListening: folder.url) }
        defer { origins.forEach { $0.stop() } }
        let urls = (0..<Self.urlCount).map { index in
            let direct = server.url("/alias/\(index)/images/\(names[index % names.count])")
            // 301: kept as long as the image (a bare 302 would make every later load revalidate).
            return index % 3 == 0 ? direct : origins[index % 3 - 1].redirect(to: direct, code: 301)
        }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.memoryCountLimit = Self.memoryCountLimit
            $0.memoryByteLimit = Self.memoryByteLimit
            $0.diskByteLimit = Self.diskByteLimit
        }
        let residentBefore = Self.residentBytes()
        let sampler = BudgetSampler(store: store)
        sampler.start()

        let calls = LockedBox([Int](repeating: 0, count: Self.loadCount))
        let results = LockedBox([Int: Int]())  // load -> delivered width, for loads never cancelled
        var cancelled = Set<Int>()
        var generator = SystemRandomNumberGenerator()
        // In waves, so the loopback server sees a few hundred requests at a time, not thousands.
        for wave in stride(from: 0, to: Self.loadCount, by: 500) {
            let range = wave..<min(wave + 500, Self.loadCount)
            let done = expectation(description: "wave \(wave)")
            done.expectedFulfillmentCount = range.count
            for index in range {
                let request = ImageRequest(
                    url: urls.randomElement(using: &generator)!,
                    targetWidth: CGFloat(Self.widths.randomElement(using: &generator)!))
                let task = store.load(request) { image in
                    XCTAssertTrue(Thread.isMainThread, "load \(index) completed off the main thread")
                    calls.withLock { $0[index] += 1 }
                    if let image { results.withLock { $0[index] = image.width } }
                    done.fulfill()
                }
                switch Int.random(in: 0..<4, using: &generator) {
                case 0:
                    task.cancel()
                    cancelled.insert(index)
                case 1:
                    let delay = Double.random(in: 0...0.02, using: &generator)
                    DispatchQueue.main.asyncAfter(deadline: .now() + delay) { task.cancel() }
                    cancelled.insert(index)
                case 2:
                    // Prefetched too, then left to the prefetch: its run is lowered.
                    store.startPrefetching([request])
                    let delay = Double.random(in: 0...0.02, using: &generator)
                    DispatchQueue.main.asyncAfter(deadline: .now() + delay) { task.cancel() }
                    cancelled.insert(index)
                default:
                    break
                }
            }
            wait(for: [done], timeout: 120)
        }
        // A second, wrong call would arrive on the main queue: let it run before counting. The
        // prefetches run on until they are done.
        RunLoop.main.run(until: Date().addingTimeInterval(0.3))
        let prefetchDeadline = Date().addingTimeInterval(120)
        while store.prefetches.withLock({ !$0.running.isEmpty || $0.lineLength > 0 }), Date() < prefetchDeadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.05))
        }
        sampler.stop()
        store.waitForDiskMaintenance()

        let counts = calls.withLock { $0 }
        XCTAssertEqual(counts.filter { $0 != 1 }.count, 0, "loads whose completion did not run exactly once")
        let delivered = results.withLock { $0 }
        let lost = (0..<Self.loadCount).filter { !cancelled.contains($0) && delivered[$0] == nil }
        XCTAssertEqual(lost, [], "loads never cancelled that got no image")
        XCTAssertTrue(delivered.values.allSatisfy(Self.widths.contains))

        // Nothing left in flight, and the tiers within their budgets throughout and at the end.
        XCTAssertEqual(store.variantRuns.count, 0)
        XCTAssertEqual(store.fetchRuns.count, 0)
        XCTAssertEqual((store.configuration.dataLoader as? DataLoader)?.http.unfinishedTaskCount, 0)
        XCTAssertEqual(store.prefetches.withLock { $0.running.count }, 0)
        // No fetch slot is held, waited for, or left in a host's set, whichever host it moved to.
        XCTAssertEqual(store.fetchSlots.busyCount, 0)
        XCTAssertEqual(store.fetchSlots.waitingCount, 0)
        XCTAssertEqual(store.fetchSlots.sourceCount, 0)
        let peaks = sampler.peaks
        XCTAssertGreaterThan(peaks.samples, 0)
        XCTAssertLessThanOrEqual(peaks.memoryCount, Self.memoryCountLimit)
        XCTAssertLessThanOrEqual(peaks.memoryBytes, Self.memoryByteLimit)
        // Room is made before each file appears, so the disk budget holds in every sample too.
        XCTAssertLessThanOrEqual(peaks.diskBytes, Self.diskByteLimit)
        XCTAssertLessThanOrEqual(store.diskUsage().byteCount, Self.diskByteLimit)
        let residentAfter = Self.residentBytes()
        print(
            """
            stress: \(Self.loadCount) loads over \(Self.urlCount) URLs, \(cancelled.count) cancelled, \
            \(delivered.count) images delivered; \(store.statistics.sourceFetches) fetches, \
            \(store.statistics.diskHits) disk hits, \(store.statistics.decodes) decodes; \
            peaks over \(peaks.samples) samples: memory \(peaks.memoryCount) entries / \(peaks.memoryBytes) bytes \
            (limits \(Self.memoryCountLimit) / \(Self.memoryByteLimit)), disk \(peaks.diskBytes) bytes \
            (limit \(Self.diskByteLimit)); RSS \(residentBefore >> 20) MiB before, \
            \(residentAfter >> 20) MiB after
            """)
    }

    /// The resident set size of this process from /proc, for the report (not asserted: the
    /// allocator keeps freed pages).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// Samples the store's memory tiers and disk folder on a background thread while a test runs.
final class BudgetSampler: @unchecked Sendable {
    // Unchecked: `store` and `thread` are set before `start()` and not changed after; the peaks
    // and the stop flag live in `state`, behind its lock.
    struct Peaks {
        var samples = 0
        var memoryCount = 0
        var memoryBytes = 0
        var diskBytes = 0
    }

    private let store: ImageStore
    private let state = LockedBox((peaks: Peaks(), stopped: false))
    private let finished = DispatchSemaphore(value: 0)

    init(store: ImageStore) {
        self.store = store
    }

    var peaks: Peaks { state.withLock { $0.peaks } }

    func start() {
        Thread.detachNewThread { [self] in
            while !state.withLock({ $0.stopped }) {
                let variants = (store.variants.count, store.variants.totalCost)
                let originals = (store.originals.count, store.originals.totalCost)
                let disk = store.diskUsage().byteCount
                state.withLock { state in
                    state.peaks.samples += 1
                    state.peaks.memoryCount = max(state.peaks.memoryCount, variants.0, originals.0)
                    state.peaks.memoryBytes = max(state.peaks.memoryBytes, variants.1, originals.1)
                    state.peaks.diskBytes = max(state.peaks.diskBytes, disk)
                }
                usleep(10_000)
            }
            finished.signal()
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        finished.wait()
    }
}
