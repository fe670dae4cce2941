import Foundation
import Testing

@testable import AsyncImageCache

/// The disk budget bounds the space the tier takes on disk, as a user reads it with `du`: whole blocks,
/// and the block that a file's extended attributes take where its inode has no room for them. Counted
/// by file sizes, a folder of small avatars with their HTTP caching facts took about 2.7 times its
/// budget on ext4.
@Suite struct ImageStoreDiskSpaceTests {
    @Test func smallImagesWithTheirCachingFactsTakeNoMoreSpaceOnDiskThanTheBudget() async throws {
        let images = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 48, height: 48), count: 40), into: images.url)
        let server = try await TestHTTPServer(serving: images.url)
        defer { server.stop() }
        let root = TemporaryDirectory("root")
        let budget = 64 * 1024
        let store = try ImageStore.makeForTesting(root: root.url) { $0.diskByteLimit = budget }
        // With an entity tag and a max-age, as most image servers answer: both are kept beside the bytes.
        let urls = names.map { server.url("/etag/images/\($0)") }
        for url in urls {
            _ = try await store.image(for: ImageRequest(url: url, targetWidth: 48))
        }
        store.waitForDiskMaintenance()
        #expect(store.disk.cacheMetadata(for: urls[urls.count - 1])?.entityTag != nil)

        let files = try FileManager.default.contentsOfDirectory(atPath: store.directory.path)
        var spaceOnDisk = 0
        var sizes = 0
        for file in files {
            var info = stat()
            try #require(lstat(store.directory.appendingPathComponent(file).path, &info) == 0)
            spaceOnDisk += Int(info.st_blocks) * 512
            sizes += Int(info.st_size)
        }
        print("disk space: \(files.count) files, \(sizes) bytes, \(spaceOnDisk) bytes on disk, budget \(budget)")
        #expect(spaceOnDisk <= budget)
        // Not by keeping nothing: the newest files stay, as many as fit.
        #expect(files.count >= 2)
        #expect(FileManager.default.fileExists(atPath: store.disk.filePath(for: urls[urls.count - 1])))
    }
}
