import Foundation
import Testing

@testable import AsyncImageCache

/// The disk tier across processes: a writer killed with SIGKILL at random points, and two
/// processes loading overlapping URLs into one folder. Afterwards every file is whole and equals
/// its source, leftover temporary files go when the store next opens, and the budget holds.
///
/// `AIC_CRASH_ITERATIONS` sets the number of kills (10 by default; `scripts/crash-test` runs 100).
@Suite struct CacheProcessTests {
    static let killIterations = ProcessInfo.processInfo.environment["AIC_CRASH_ITERATIONS"].flatMap(Int.init) ?? 10

    let images = TemporaryDirectory("process-images")
    let server: TestHTTPServer
    let names: [String]
    let bytesByName: [String: Data]

    init() async throws {
        // Sizes from 8 KB to about 100 KB, so kills land inside writes as well as between them.
        let sizes = [(160, 120), (320, 240), (480, 360), (640, 480), (800, 600), (1024, 768)]
        names = try SampleImages.writeJPEGs(sizes.map { PixelSize(width: $0.0, height: $0.1) }, into: images.url)
        var bytes: [String: Data] = [:]
        for name in names { bytes[name] = try Data(contentsOf: images.url.appendingPathComponent(name)) }
        bytesByName = bytes
        server = try await TestHTTPServer(serving: images.url)
    }

    /// Distinct URLs (so each one is a new disk write) that cycle through the served images; the
    /// server ignores the query.
    func urls(_ tag: String, _ range: Range<Int>) -> [URL: Data] {
        var result: [URL: Data] = [:]
        for index in range {
            let name = names[index % names.count]
            result[server.url("/images/\(name)?\(tag)=\(index)")] = bytesByName[name]
        }
        return result
    }

    @Test func aWriterKilledAtRandomPointsLeavesOnlyWholeFiles() async throws {
        let root = TemporaryDirectory("process-cache")
        let directory = root.url.appendingPathComponent("writer", isDirectory: true)
        var sources: [URL: Data] = [:]
        var generator = SystemRandomNumberGenerator()
        var killedWhileRunning = 0
        var leftoverTemporaries = 0
        var checkedFiles = 0
        for iteration in 0..<Self.killIterations {
            let batch = urls("kill\(iteration)", 0..<40)
            sources.merge(batch) { first, _ in first }
            // A small budget, so trims run (and get killed) too.
            let writer = try CacheWriterProcess(root: root.url, diskLimit: 600_000, urls: Array(batch.keys))
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...700, using: &generator)))
            if await writer.kill() { killedWhileRunning += 1 }

            let afterKill = CacheAudit(sources: sources).check(directory)
            #expect(afterKill.problems == [], "after kill \(iteration)")
            leftoverTemporaries += afterKill.temporaryFiles.count
            checkedFiles += afterKill.checkedFiles
            DiskStore(directory: directory, byteLimit: 600_000).waitForPendingTrims()  // what the next launch does
            #expect(CacheAudit(sources: sources).check(directory).temporaryFiles == [], "after reopening \(iteration)")
        }
        // Else the checks above looked at an empty folder: a writer that ended at once (a broken subcommand or
        // root) would pass them.
        #expect(checkedFiles > 0, "no writer left a file to check")
        print(
            """
            crash consistency: \(Self.killIterations) kills, \(killedWhileRunning) while running, \
            \(checkedFiles) files checked, \(leftoverTemporaries) temporary files left and removed on reopen
            """)
    }

    @Test func twoProcessesOnOneFolderLeaveWholeFilesWithinTheBudget() async throws {
        let root = TemporaryDirectory("process-cache")
        let budget = 400_000
        let first = urls("shared", 0..<90)
        let second = urls("shared", 45..<135)
        let writers = try [first, second].map {
            try CacheWriterProcess(root: root.url, diskLimit: budget, concurrency: 6, urls: Array($0.keys).shuffled())
        }
        for (writer, expected) in zip(writers, [first, second]) {
            let (status, output) = await writer.finish()
            #expect(status == 0)
            #expect(output == "loaded \(expected.count) failed 0\n")
        }
        let directory = root.url.appendingPathComponent("writer", isDirectory: true)
        let report = CacheAudit(sources: first.merging(second) { value, _ in value }).check(directory)
        #expect(report.problems == [])
        #expect(report.temporaryFiles == [])
        #expect(report.checkedFiles > 0)
        let total = DiskStore(directory: directory, byteLimit: budget).totalByteCount
        #expect(total <= budget)
    }
}
