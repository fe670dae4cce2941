import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct FileDataLoaderTests {
    let directory = TemporaryDirectory("file-loader")

    private func write(_ data: Data, to name: String) throws -> URL {
        let url = directory.url.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }

    @Test func readsTheFileBytesExactly() async throws {
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let url = try write(bytes, to: "photo.jpg")
        #expect(try await FileDataLoader().loadData(for: url) == bytes)
    }

    @Test func readsAnEmptyFileAsEmptyData() async throws {
        let url = try write(Data(), to: "empty.png")
        #expect(try await FileDataLoader().loadData(for: url).isEmpty)
    }

    @Test func readsAPathWithSpacesAndNonASCIICharacters() async throws {
        let url = try write(Data("bytes".utf8), to: "a photo é.jpg")
        #expect(url.absoluteString.contains("%20"))
        #expect(try await FileDataLoader().loadData(for: url) == Data("bytes".utf8))
    }

    @Test func aFileLongerThanItsAnnouncedSizeIsReadToTheEnd() async throws {
        // Files under /proc announce a size of 0 and then have content: the buffer must grow.
        let url = URL(fileURLWithPath: "/proc/version")
        let expected = try Data(contentsOf: url)
        #expect(expected.count > 1)
        #expect(try await FileDataLoader().loadData(for: url) == expected)
        await #expect(throws: ImageLoadingError.responseTooLarge(url: url, byteLimit: 10)) {
            try await FileDataLoader(maximumBytes: 10).loadData(for: url)
        }
    }

    @Test func aFileURLOnAnotherHostIsNeverReadFromThisOne() async throws {
        // RFC 8089: file://server/path names a file on that server. Before, its path alone was read
        // here: file://server/etc/passwd loaded this machine's /etc/passwd, and the store gave its size.
        let local = try write(SampleImages.jpeg(width: 40, height: 30), to: "photo.jpg")
        let remote = try #require(URL(string: "file://server\(local.path)"))
        await #expect(
            throws: ImageLoadingError.fileUnavailable(
                path: local.path, reason: "is on another host (server), not this one")
        ) {
            try await FileDataLoader().loadData(for: remote)
        }
        let store = try ImageStore.makeForTesting(root: directory.url.appendingPathComponent("cache"))
        #expect(store.cachedPixelSize(for: remote) == nil)
        await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: remote, targetWidth: 20))
        }
        // localhost is this machine.
        let here = try #require(URL(string: "file://LocalHost\(local.path)"))
        #expect(try await FileDataLoader().loadData(for: here) == (try Data(contentsOf: local)))
        #expect(store.cachedPixelSize(for: here) == CGSize(width: 40, height: 30))
        #expect(try await store.image(for: ImageRequest(url: here, targetWidth: 20)).pixelSize.width == 20)
    }

    @Test func aStoresLoaderCapsLocalFilesWithMaximumFileBytes() async throws {
        let local = try write(SampleImages.jpeg(width: 40, height: 30), to: "capped.jpg")
        let size = try Data(contentsOf: local).count
        let store = try ImageStore.makeForTesting(root: directory.url.appendingPathComponent("cache")) {
            $0.dataLoader = DataLoader(maximumFileBytes: size - 1)
        }
        await #expect(throws: ImageLoadingError.responseTooLarge(url: local, byteLimit: size - 1)) {
            try await store.image(for: ImageRequest(url: local, targetWidth: 20))
        }
        let roomy = try ImageStore.makeForTesting(root: directory.url.appendingPathComponent("cache2")) {
            $0.dataLoader = DataLoader(maximumFileBytes: size)
        }
        #expect(try await roomy.image(for: ImageRequest(url: local, targetWidth: 20)).pixelSize.width == 20)
    }

    /// A sparse file that says the largest size there is (tmpfs allows it; ext4 does not) is out of memory, an
    /// error: before, working out its buffer's size overflowed and the process ended.
    @Test(.enabled(if: ScratchFileSystem.sharedMemoryIsTmpfs, "needs /dev/shm on a tmpfs"))
    func aFileOfTheLargestSizeIsOutOfMemoryNotACrash() async throws {
        let path = "/dev/shm/aic-largest-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).jpg"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try #require(descriptor >= 0, "open: \(String(cString: strerror(errno)))")
        defer { unlink(path) }
        let sized = ftruncate(descriptor, off_t.max)
        close(descriptor)
        try #require(sized == 0, "ftruncate to \(off_t.max) bytes: \(String(cString: strerror(errno)))")
        await #expect(throws: ImageLoadingError.fileUnavailable(path: path, reason: "out of memory")) {
            try await FileDataLoader().loadData(for: URL(fileURLWithPath: path))
        }
    }

    @Test func aMissingFileIsUnavailable() async {
        let url = directory.url.appendingPathComponent("missing.jpg")
        await #expect(throws: ImageLoadingError.fileUnavailable(path: url.path, reason: "No such file or directory")) {
            try await FileDataLoader().loadData(for: url)
        }
    }

    @Test func aDirectoryIsUnavailable() async {
        await #expect(throws: ImageLoadingError.fileUnavailable(path: directory.url.path, reason: "is a directory")) {
            try await FileDataLoader().loadData(for: directory.url)
        }
    }

    @Test func aDeviceIsUnavailableRatherThanReadForever() async {
        let url = URL(fileURLWithPath: "/dev/zero")
        await #expect(throws: ImageLoadingError.fileUnavailable(path: "/dev/zero", reason: "is not a regular file")) {
            try await FileDataLoader().loadData(for: url)
        }
    }

    @Test func anUnreadableFileIsUnavailable() async throws {
        if getuid() == 0 {
            // Root reads any file whatever its permissions, so use a regular file whose read fails:
            // /proc/self/mem at offset 0 answers EIO.
            let url = URL(fileURLWithPath: "/proc/self/mem")
            await #expect(throws: ImageLoadingError.fileUnavailable(path: url.path, reason: "Input/output error")) {
                try await FileDataLoader().loadData(for: url)
            }
            return
        }
        let url = try write(Data("secret".utf8), to: "locked.jpg")
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: url.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path) }
        await #expect(throws: ImageLoadingError.fileUnavailable(path: url.path, reason: "Permission denied")) {
            try await FileDataLoader().loadData(for: url)
        }
    }

    @Test func aFileOverTheByteCapIsTooLarge() async throws {
        let url = try write(Data(count: 2_000), to: "big.jpg")
        await #expect(throws: ImageLoadingError.responseTooLarge(url: url, byteLimit: 1_000)) {
            try await FileDataLoader(maximumBytes: 1_000).loadData(for: url)
        }
        #expect(try await FileDataLoader(maximumBytes: 2_000).loadData(for: url).count == 2_000)
    }

    @Test func aCancelledTaskDoesNotRead() async throws {
        let url = try write(Data("bytes".utf8), to: "a.jpg")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await FileDataLoader().loadData(for: url)
        }
        await #expect(throws: ImageLoadingError.cancelled) { try await task.value }
    }

    @Test func aURLThatIsNotAFileURLIsUnsupported() async {
        let url = URL(string: "https://example.com/a.jpg")!
        await #expect(throws: ImageLoadingError.unsupportedURL(url)) { try await FileDataLoader().loadData(for: url) }
    }
}
