import Foundation
import Testing

@testable import AsyncImageCache

/// Removals in two stores on one folder, whose `removeAll()` and `removeImage(for:)` share the folder's
/// generation and queue.
@Suite(.timeLimit(.minutes(2))) struct ImageStoreSharedFolderRemovalTests {
    /// `removeImage(for:)` of one store while `removeAll()` of another store on the folder runs: the
    /// `removeAll()` empties only its own store's memory, so the removal must still forget the image in
    /// its store. Here the `removeAll()` is held on the folder's queue, before it raises the generation, while
    /// the `removeImage(for:)` reads the generation and waits behind it.
    @Test func aRemoveImageWhileAnotherStoreOnTheFolderRemovesAllStillForgetsTheImage() async throws {
        let folder = TemporaryDirectory("remove-image-during-remove-all")
        let served = TemporaryDirectory("remove-image-during-remove-all-served")
        try SampleImages.jpeg(width: 64, height: 48).write(to: served.url.appendingPathComponent("avatar.jpg"))
        let server = try await TestHTTPServer(serving: served.url)
        defer { server.stop() }
        let url = server.url("/images/avatar.jpg")
        let request = ImageRequest(url: url, targetWidth: 32)
        let clearing = try ImageStore.makeForTesting(root: folder.url)
        let forgetting = try ImageStore.makeForTesting(root: folder.url)
        _ = try await forgetting.image(for: request)
        await onOwnThread { forgetting.waitForDiskMaintenance() }
        #expect(forgetting.cachedImage(for: request) != nil)

        // The `removeAll()` lists the folder on its queue, then raises the generation: held at the listing.
        let listing = await ListingHold.holding(clearing.disk)
        let listed = clearing.disk.listingCount
        // On threads of their own, started at once (a task could wait behind other suites' tasks).
        let removals = DispatchGroup()
        removals.enter()
        Thread.detachNewThread {
            clearing.removeAll()
            removals.leave()
        }
        try await waitUntil { clearing.disk.listingCount > listed }
        removals.enter()
        Thread.detachNewThread {
            // Named through /proc, not `Thread.current.name`: Foundation names the system thread only once the
            // thread that started this one has recorded it (a race), and a new thread has its creator's name.
            try? ListingHold.removingThreadName.write(
                toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            forgetting.removeImage(for: url)
            removals.leave()
        }
        // Once it sleeps, it has read the generation and waits for the folder's queue.
        try await waitUntil { ListingHold.isSleeping(threadNamed: ListingHold.removingThreadName) }
        listing.release()
        await onOwnThread { removals.wait() }

        #expect(forgetting.cachedImage(for: request) == nil, "the removed image is still in memory")
        #expect(forgetting.cachedOriginalBytes(for: url) == nil)
        #expect(forgetting.cachedPixelSize(for: url) == nil)
    }

    /// A revalidation that finds the image changed while `removeAll()` of another store on the folder ran:
    /// that `removeAll()` empties only its own store's memory, so the store that asked still holds the old
    /// image, now known to be out of date. It forgets it: the next load shows the new image. (Before, the
    /// answer was dropped as if the image were gone from both stores, and the old one was shown again.)
    @Test func aRevalidationThatFindsTheImageChangedWhileAnotherStoreRemovesAllForgetsTheOldOne() async throws {
        let served = TemporaryDirectory("revalidation-during-remove-all-served")
        let file = served.url.appendingPathComponent("photo.jpg")
        try SampleImages.jpeg(width: 200, height: 40).write(to: file)
        let server = try await TestHTTPServer(serving: served.url)
        // Stale at once (no-cache), with validators; its revalidations are held until released.
        let path = "/held-conditional/recheck/cache/no-cache/images/photo.jpg"
        let url = server.url(path)
        let request = ImageRequest(url: url, targetWidth: 20)
        let folder = TemporaryDirectory("revalidation-during-remove-all")
        let checking = try ImageStore.makeForTesting(root: folder.url)
        let clearing = try ImageStore.makeForTesting(root: folder.url)
        #expect(try await checking.image(for: request).pixelSize == PixelSize(width: 20, height: 4))

        try SampleImages.jpeg(width: 120, height: 90).write(to: file, options: .atomic)
        // The old image from memory; its check waits at the server.
        #expect(try await checking.image(for: request).pixelSize == PixelSize(width: 20, height: 4))
        try await waitUntil { try await server.hits(for: path) == 2 }
        await onOwnThread { clearing.removeAll() }
        try await server.release("recheck")
        try await waitUntil { checking.revalidating.withLock { $0.isEmpty } }

        #expect(checking.cachedImage(for: request) == nil, "the old image is still in memory")
        #expect(checking.cachedPixelSize(for: url) != CGSize(width: 200, height: 40))
        let next = try await checking.image(for: request)
        #expect(next.pixelSize == PixelSize(width: 20, height: 15), "the old image was shown again")
        #expect(checking.cachedPixelSize(for: url) == CGSize(width: 120, height: 90))
        server.stop()
    }
}

/// Holds a disk tier's next listing of its folder (the lock it takes to date the listing) until released.
private final class ListingHold: Sendable {
    static let removingThreadName = "aic-rm-image"
    private let gate = DispatchSemaphore(value: 0)

    static func holding(_ disk: DiskStore) async -> ListingHold {
        let hold = ListingHold()
        let holding = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [gate = hold.gate] in
            disk.folder.lastListed.withLock { _ in
                holding.signal()
                gate.wait()
            }
        }
        await onOwnThread { holding.wait() }
        return hold
    }

    func release() {
        gate.signal()
    }

    /// Whether the thread of this process named `name` is sleeping (blocked), from `/proc`.
    static func isSleeping(threadNamed name: String) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let end = stat.range(of: ")", options: .backwards)
            else { continue }
            return stat[end.upperBound...].trimmingCharacters(in: .whitespaces).hasPrefix("S")
        }
        return false
    }
}
