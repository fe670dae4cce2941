import Foundation
import Testing

@testable import AsyncImageCache

#if canImport(Glibc)
import Glibc
#endif

/// The disk tier when the process has no descriptor free (`EMFILE`): a folder that cannot be listed
/// is not an empty one. Exit tests, so that the descriptors are taken in a process of their own.
@Suite(.timeLimit(.minutes(2))) struct DiskStoreOutOfDescriptorsTests {
    /// `removeAll()` could not list the folder, took it for empty and removed nothing, while it emptied
    /// memory: once descriptors were free again, every "removed" image was served from disk (an app
    /// clearing its cache as a user signs out). Now the folder is moved aside whole, and removed later.
    @Test func removeAllWithNoDescriptorFreeStillForgetsEveryFile() async {
        await #expect(processExitsWith: .success) {
            let loaded = try await LoadedToDisk()
            defer { loaded.server.stop() }
            let (store, urls) = (loaded.store, loaded.urls)
            let folder = store.disk.folder.path

            try DescriptorExhaustion.whileTaken { store.removeAll() }

            for url in urls {
                precondition(store.cachedOriginalBytes(for: url) == nil, "\(url) is still served from disk")
                precondition(store.cachedPixelSize(for: url) == nil, "\(url)'s size is still known")
            }
            precondition(store.diskUsage().fileCount == 0)
            var info = stat()
            precondition(stat(folder, &info) == 0, "the folder is there again, empty")
            // The folder moved aside goes once it can be listed.
            try await waitUntil { loaded.foldersMovedAside().isEmpty }
            // And the images are fetched again.
            let request = ImageRequest(url: urls[0], targetWidth: 16)
            _ = try await store.image(for: request)
            let hits = try await loaded.server.hits(for: urls[0].path)
            precondition(hits == 2, "\(hits) requests")
        }
    }

    /// The same for a store whose name takes the 255 bytes a folder name may have: the folder moved aside is
    /// named by a hash of the name, not the name and more, which no file system takes (ENAMETOOLONG), and
    /// the rename failed, so that every file stayed.
    @Test func removeAllWithNoDescriptorFreeForgetsTheFilesOfAStoreWithTheLongestName() async {
        await #expect(processExitsWith: .success) {
            let loaded = try await LoadedToDisk(name: String(repeating: "n", count: 255))
            defer { loaded.server.stop() }
            try DescriptorExhaustion.whileTaken { loaded.store.removeAll() }
            for url in loaded.urls {
                precondition(loaded.store.cachedOriginalBytes(for: url) == nil, "\(url) is still served from disk")
            }
            try await waitUntil { loaded.foldersMovedAside().isEmpty }
        }
    }

    /// A folder moved aside that its process did not get to remove (it ended first) goes when a store next
    /// opens the folder it was moved from; one moved aside from another store's folder stays.
    @Test func aFolderMovedAsideGoesWhenAStoreOpensItsFolderAgain() async throws {
        let root = TemporaryDirectory("moved-aside-sweep")
        let parent = root.url
        let ours = parent.appendingPathComponent(DiskStore.asidePrefix(forFolderNamed: "sweep") + "1-abc")
        let theirs = parent.appendingPathComponent(DiskStore.asidePrefix(forFolderNamed: "other") + "1-abc")
        for folder in [ours, theirs] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data([1, 2, 3]).write(to: folder.appendingPathComponent("file"))
        }
        let store = try ImageStore.makeForTesting(root: root.url, name: "sweep")
        #expect(store.disk.folder.path == parent.appendingPathComponent("sweep").path)
        try await waitUntil { !FileManager.default.fileExists(atPath: ours.path) }
        store.waitForDiskMaintenance()
        #expect(FileManager.default.fileExists(atPath: theirs.appendingPathComponent("file").path))
    }

    /// A trim that could not list the folder recorded it as holding nothing, so writes went past the
    /// budget until the next listing. Now the count it had stays.
    @Test func aTrimWithNoDescriptorFreeKeepsTheCount() async {
        await #expect(processExitsWith: .success) {
            let loaded = try await LoadedToDisk()
            defer { loaded.server.stop() }
            let store = loaded.store
            store.disk.trim()
            let counted = store.disk.usage.withLock { $0.bytes }
            precondition((counted ?? 0) > 0, "counted \(String(describing: counted))")

            try DescriptorExhaustion.whileTaken { store.disk.trim() }

            let after = store.disk.usage.withLock { $0.bytes }
            precondition(after == counted, "counted \(String(describing: after)) after the trim, \(counted!) before")
        }
    }
}

/// A store whose disk tier holds three images loaded from a loopback server, its memory emptied.
private struct LoadedToDisk {
    let served = TemporaryDirectory("out-of-descriptors-served")
    let root = TemporaryDirectory("out-of-descriptors")
    let server: TestHTTPServer
    let store: ImageStore
    let urls: [URL]

    init(name: String = "test") async throws {
        let sizes = [
            PixelSize(width: 64, height: 48), PixelSize(width: 40, height: 30), PixelSize(width: 30, height: 20),
        ]
        let names = try SampleImages.writeJPEGs(sizes, into: served.url)
        let server = try await TestHTTPServer(serving: served.url)
        let store = try ImageStore.makeForTesting(root: root.url, name: name)
        let urls = names.map { server.url("/images/\($0)") }
        for url in urls { _ = try await store.image(for: ImageRequest(url: url, targetWidth: 16)) }
        store.waitForDiskMaintenance()
        store.clearMemory()
        precondition(store.diskUsage().fileCount == urls.count)
        precondition(urls.allSatisfy { store.cachedOriginalBytes(for: $0) != nil })
        (self.server, self.store, self.urls) = (server, store, urls)
    }

    /// The folders moved aside anywhere under the store's root.
    func foldersMovedAside() -> [String] {
        let all = FileManager.default.enumerator(atPath: root.url.path)?.allObjects as? [String] ?? []
        return all.filter { $0.contains(DiskStore.asideMarker) }
    }
}

/// Every descriptor of the process taken, as an app that leaks them ends up.
enum DescriptorExhaustion {
    /// Runs `body` with every descriptor taken (the soft limit lowered to 256 first, so that few are
    /// needed), then frees them and puts the limit back.
    static func whileTaken(_ body: () throws -> Void) throws {
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { throw POSIXError(.EINVAL) }
        var lowered = limit
        lowered.rlim_cur = min(limit.rlim_cur, 256)
        guard setrlimit(resource, &lowered) == 0 else { throw POSIXError(.EPERM) }
        var taken: [Int32] = []
        defer {
            for descriptor in taken { close(descriptor) }
            _ = setrlimit(resource, &limit)
        }
        while true {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { break }
            taken.append(descriptor)
        }
        guard errno == EMFILE else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        try body()
    }
}
