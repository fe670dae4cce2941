import Foundation
import Testing

@testable import AsyncImageCache

/// The HTTP caching facts written beside a file are read back whole, however long the validators:
/// an entry whose facts cannot be read counts as fresh forever and is never revalidated.
@Suite struct DiskStoreLongMetadataTests {
    @Test func longValidatorsAreReadBackSoAStaleEntryStaysStale() throws {
        let folder = TemporaryDirectory("disk-metadata")
        let disk = DiskStore(directory: folder.url, byteLimit: 1 << 20)
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let tag = "\"" + String(repeating: "e", count: 2100) + "\""
        let metadata = HTTPCacheMetadata(
            policy: HTTPCachePolicy(maxAge: 0, entityTag: tag), receivedAt: Date(timeIntervalSince1970: 1000))
        try disk.store(Data([1, 2, 3]), pixelSize: PixelSize(width: 1, height: 1), metadata: metadata, for: url)
        let read = disk.cacheMetadata(for: url)
        #expect(read != nil, "the attribute was written but cannot be read back")
        #expect(read?.entityTag?.count == tag.count)
        #expect(read?.isStale() == true)
    }

    @Test func aRelaunchedStoreRevalidatesAStaleEntryWithALongETag() async throws {
        let folder = TemporaryDirectory("store-metadata")
        let tag = "\"" + String(repeating: "e", count: 2100) + "\""
        let loader = ValidatorLoader(bytes: try SampleImages.jpeg(width: 64, height: 48), entityTag: tag)
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let first = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        _ = try await first.image(for: ImageRequest(url: url, targetWidth: 32))
        first.waitForDiskMaintenance()
        let relaunched = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        _ = try await relaunched.image(for: ImageRequest(url: url, targetWidth: 32))
        // The revalidation runs in the background: waited for (it records an issue if it never comes), not
        // given a fixed 300 ms, which expected it within that time.
        try await waitUntil { relaunched.statistics.revalidations == 1 && loader.conditionalTags.count == 1 }
        #expect(relaunched.statistics.revalidations == 1, "a no-cache entry was served without revalidating")
        #expect(loader.conditionalTags.count == 1)
        #expect(loader.conditionalTags.first == tag)
    }

    /// Where no extended attribute can be written, an entry that goes stale is not kept on disk: read
    /// back after a relaunch without its caching facts, it counted as fresh until evicted, and a
    /// `no-cache` image was served from disk without the server being asked again.
    @Test func anEntryThatGoesStaleIsNotKeptWhereItsCachingFactsCannotBeWritten() async throws {
        let folder = TemporaryDirectory("no-attributes-no-cache")
        let loader = ValidatorLoader(bytes: try SampleImages.jpeg(width: 64, height: 48), entityTag: "\"v1\"")
        let url = URL(string: "https://images.example.com/photo.jpg")!
        func store() throws -> ImageStore {
            try ImageStore.makeForTesting(root: folder.url) {
                $0.dataLoader = loader
                $0.extendedAttributes = RefusingAttributes()
            }
        }
        let first = try store()
        #expect(try await first.image(for: ImageRequest(url: url, targetWidth: 32)).pixelSize.width == 32)
        first.waitForDiskMaintenance()
        #expect(first.diskFileNames.isEmpty)
        let relaunched = try store()
        _ = try await relaunched.image(for: ImageRequest(url: url, targetWidth: 32))
        #expect(relaunched.statistics.sourceFetches == 1, "served from disk without asking the server")
    }
}

/// Answers `bytes` with `Cache-Control: no-cache` and `entityTag`, and `304` to a request that sends
/// that tag back; records the tags of conditional requests.
final class ValidatorLoader: DataLoading, @unchecked Sendable {
    // `tags` is only touched while holding `lock`.
    private let lock = NSLock()
    private var tags: [String] = []
    private let bytes: Data
    private let entityTag: String

    init(bytes: Data, entityTag: String) {
        self.bytes = bytes
        self.entityTag = entityTag
    }

    var conditionalTags: [String] { lock.withLock { tags } }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data { bytes }

    func loadData(
        for url: URL, revalidating validators: HTTPCachePolicy?
    ) async throws(ImageLoadingError) -> ConditionalLoadResult {
        let policy = HTTPCachePolicy(maxAge: 0, entityTag: entityTag)
        guard let tag = validators?.entityTag else { return .modified(bytes, policy) }
        lock.withLock { tags.append(tag) }
        return tag == entityTag ? .notModified(policy) : .modified(bytes, policy)
    }
}
