import Dispatch
import Foundation
import Testing

@testable import AsyncImageCache

/// The first writes into a cache folder that does not exist yet make it, however many run at once: the
/// first to find it missing makes it, and the others find it made and write into it. Before, a write whose
/// file could not be created asked whether the folder existed only afterwards; when another write had made
/// it meanwhile, the first failed with `ENOENT` and its image was not kept (seen under ThreadSanitizer: a
/// test's synchronous store beside its own load's background write, both the folder's first).
@Suite struct DiskStoreFolderCreationTests {
    @Test func concurrentFirstWritesIntoAMissingFolderAllLand() throws {
        let root = TemporaryDirectory("disk-folder-creation")
        let bytes = Data((0..<2000).map { UInt8($0 % 251) })
        let writers = 8
        var failures: [String] = []
        for round in 0..<40 {
            // Two levels to make, as a store's `<cache>/AsyncImageCache/<name>` has on first launch.
            let folder = root.url.appendingPathComponent("\(round)/store", isDirectory: true)
            let disk = DiskStore(directory: folder, byteLimit: 1 << 20)
            let errors = LockedBox([String]())
            // Each on a thread of its own, let go at once, so that several find the folder missing.
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for index in 0..<writers {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    start.wait()
                    let url = URL(string: "https://images.example.com/\(round)/\(index).jpg")!
                    do {
                        try disk.store(bytes, pixelSize: PixelSize(width: 2, height: 1), for: url)
                    } catch {
                        errors.withLock { $0.append("round \(round), writer \(index): \(error)") }
                    }
                }
            }
            for _ in 0..<writers { start.signal() }
            done.wait()
            let failed = errors.withLock { $0 }
            failures += failed
            #expect(disk.entries().count == writers - failed.count, "round \(round)")
        }
        #expect(failures.isEmpty, "\(failures.count) of \(40 * writers) writes failed: \(failures.prefix(3))")
    }
}
