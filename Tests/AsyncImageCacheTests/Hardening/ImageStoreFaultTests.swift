import Foundation
import Testing

@testable import AsyncImageCache

/// Faults of the disk tier, through a real store and a real loopback server: a load still succeeds
/// from the source or fails with a typed error, and nothing torn is ever served or left behind.
///
/// The full disk and the read-only folder are real: a small tmpfs, mounted by the test (tests run
/// as root here, and root ignores `chmod 0555`). Where mounting is not allowed those two are skipped.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreFaultTests {
    let images = TemporaryDirectory("fault-images")
    let server: TestHTTPServer
    let sources: [URL: Data]

    init() async throws {
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 400, height: 300), count: 3), into: images.url)
        server = try await TestHTTPServer(serving: images.url)
        var sources: [URL: Data] = [:]
        for name in names {
            sources[server.url("/images/\(name)")] = try Data(contentsOf: images.url.appendingPathComponent(name))
        }
        self.sources = sources
    }

    func url(_ index: Int) -> URL { server.url("/images/\(index).jpg") }

    /// Loads image `index`, and waits for its disk write, which goes on in the background.
    func load(_ store: ImageStore, _ index: Int) async throws -> PlatformImage {
        let image = try await store.image(for: ImageRequest(url: url(index), targetWidth: 100))
        store.waitForDiskMaintenance()
        return image
    }

    func expectNothingTorn(in store: ImageStore, sourceLocation: SourceLocation = #_sourceLocation) {
        let report = CacheAudit(sources: sources).check(store.directory)
        #expect(report.problems == [], sourceLocation: sourceLocation)
        #expect(report.temporaryFiles == [], sourceLocation: sourceLocation)
    }

    /// A store that has cached image 0, whose disk file `damage` has since rewritten, with its
    /// memory emptied so the next load reads the file.
    func storeWithDamagedFile(in root: TemporaryDirectory, _ damage: (Data) -> Data) async throws -> (ImageStore, URL) {
        let store = try ImageStore.makeForTesting(root: root.url)
        _ = try await load(store, 0)
        let file = store.disk.fileURL(for: url(0))
        try damage(try Data(contentsOf: file)).write(to: file)
        store.clearMemory()
        return (store, file)
    }

    @Test(.enabled(if: ScratchFileSystem.isAvailable, "needs root to mount a tmpfs"))
    func aFullDiskCostsTheNextLaunchADownloadNeverTheLoad() async throws {
        let volume = try ScratchFileSystem(byteCount: 256 * 1024)
        let store = try ImageStore.makeForTesting(root: volume.url)
        try volume.fill(leavingFree: 4096)
        for index in 0..<3 { _ = try await load(store, index) }  // every JPEG is larger than the free space
        #expect(store.diskUsage().fileCount == 0)
        expectNothingTorn(in: store)

        try FileManager.default.removeItem(at: volume.url.appendingPathComponent("filler"))
        let relaunched = try ImageStore.makeForTesting(root: volume.url)
        _ = try await load(relaunched, 0)
        #expect(try await server.hits(for: "/images/0.jpg") == 2)
        #expect(relaunched.diskUsage().fileCount == 1)
        expectNothingTorn(in: relaunched)
    }

    @Test(.enabled(if: ScratchFileSystem.isAvailable, "needs root to mount a tmpfs"))
    func aReadOnlyCacheFolderServesWhatItHasAndLoadsTheRestFromTheSource() async throws {
        let volume = try ScratchFileSystem(byteCount: 1024 * 1024)
        _ = try await load(try ImageStore.makeForTesting(root: volume.url), 0)
        try volume.setReadOnly(true)
        defer { try? volume.setReadOnly(false) }  // so the tmpfs unmounts cleanly

        let store = try ImageStore.makeForTesting(root: volume.url)
        _ = try await load(store, 0)
        _ = try await load(store, 1)
        #expect(store.statistics.diskHits == 1)
        #expect(try await server.hits() == ["/images/0.jpg": 1, "/images/1.jpg": 1])
        #expect(store.diskUsage().fileCount == 1)
        #expect(store.cachedPixelSize(for: url(0)) == CGSize(width: 400, height: 300))
        expectNothingTorn(in: store)
    }

    @Test func aFileSystemWithoutExtendedAttributesGivesSizesFromTheHeader() async throws {
        let root = TemporaryDirectory("fault-cache")
        let refusing: (inout ImageStore.Configuration) -> Void = { $0.extendedAttributes = RefusingAttributes() }
        _ = try await load(try ImageStore.makeForTesting(root: root.url, refusing), 0)

        let relaunched = try ImageStore.makeForTesting(root: root.url, refusing)
        #expect(relaunched.cachedPixelSize(for: url(0)) == CGSize(width: 400, height: 300))
        #expect(relaunched.statistics.sizesFromHeader == 1)
        _ = try await load(relaunched, 0)
        #expect(relaunched.statistics.diskHits == 1)
        #expect(try await server.hits(for: "/images/0.jpg") == 1)
        expectNothingTorn(in: relaunched)
    }

    @Test func aCacheFolderDeletedUnderARunningStoreIsMadeAgain() async throws {
        let root = TemporaryDirectory("fault-cache")
        let store = try ImageStore.makeForTesting(root: root.url)
        _ = try await load(store, 0)
        try FileManager.default.removeItem(at: store.directory)

        store.clearMemory()
        #expect(store.cachedPixelSize(for: url(0)) == nil)  // unknown, never wrong
        _ = try await load(store, 1)
        _ = try await load(store, 0)
        #expect(try await server.hits() == ["/images/0.jpg": 2, "/images/1.jpg": 1])
        #expect(store.diskUsage().fileCount == 2)
        expectNothingTorn(in: store)
    }

    @Test func aCachedFileWhoseHeaderNoLongerParsesIsFetchedAgainInTheSameLoad() async throws {
        let root = TemporaryDirectory("fault-cache")
        let (store, file) = try await storeWithDamagedFile(in: root) { Data(repeating: 0x5A, count: $0.count) }
        _ = try await load(store, 0)
        #expect(try await server.hits(for: "/images/0.jpg") == 2)
        #expect(try Data(contentsOf: file) == sources[url(0)])
        expectNothingTorn(in: store)
    }

    @Test func aCachedFileThatFailsToDecodeIsReplacedFromTheSourceInTheSameLoad() async throws {
        let root = TemporaryDirectory("fault-cache")
        // Half the file: the header still parses, the scan ends early.
        let (store, file) = try await storeWithDamagedFile(in: root) { $0.prefix($0.count / 2) }
        let image = try await load(store, 0)
        #expect(image.pixelSize == PixelSize(width: 100, height: 75))
        #expect(store.statistics.diskHits == 1)
        #expect(try await server.hits(for: "/images/0.jpg") == 2)
        #expect(try Data(contentsOf: file) == sources[url(0)])
        expectNothingTorn(in: store)
    }

    /// Two widths decoding the same damaged file: the one that fails first replaces it from the source; the
    /// other, failing after that, leaves the replacement in place and takes it, without downloading again.
    @Test func aSecondWidthFailingOnTheSameDamagedFileKeepsTheReplacement() async throws {
        // Large enough that its decode reports its rows in several batches, so it can be held part way.
        let source = ImageStoreDecodeCancellationTests.largeJPEG
        try source.write(to: images.url.appendingPathComponent("large.jpg"))
        let url = server.url("/images/large.jpg")
        let root = TemporaryDirectory("fault-cache")
        let gate = RowGate()
        let store = try ImageStore.makeForTesting(root: root.url) { $0.decodeRowObserver = gate.observer }
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        let file = store.disk.fileURL(for: url)
        try source.prefix(source.count / 2).write(to: file)  // the header still parses, the scan ends early
        store.clearMemory()
        gate.arm()
        let parked = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 1000)) }
        try await waitUntil { gate.parkedCount == 1 }
        // Another width takes the same bytes, fails on them and replaces the file from the source.
        #expect(try await store.image(for: ImageRequest(url: url, targetWidth: 750)).pixelSize.width == 750)
        gate.open()
        #expect(try await parked.value.pixelSize.width == 1000)
        store.waitForDiskMaintenance()
        let hits = try await server.hits(for: "/images/large.jpg")
        #expect(hits == 2, "\(hits) downloads: the first load's, the replacement's, and one more")
        #expect(try Data(contentsOf: file) == source)
    }

    @Test func damagedBytesReadThroughCachedOriginalBytesAreReplacedToo() async throws {
        let root = TemporaryDirectory("fault-cache")
        let (store, file) = try await storeWithDamagedFile(in: root) { $0.prefix($0.count / 2) }
        #expect(store.cachedOriginalBytes(for: url(0))?.data.count == sources[url(0)]!.count / 2)
        _ = try await load(store, 0)
        #expect(try await server.hits(for: "/images/0.jpg") == 2)
        #expect(store.cachedOriginalBytes(for: url(0))?.data == sources[url(0)])
        #expect(try Data(contentsOf: file) == sources[url(0)])
    }

    @Test func aCachedFileThatExceedsThePixelBudgetIsKeptAndNotFetchedAgain() async throws {
        let root = TemporaryDirectory("fault-cache")
        let store = try ImageStore.makeForTesting(root: root.url) { $0.pixelBudget = 400 * 300 - 1 }
        _ = try await load(store, 0)  // 100 px wide: decodes at 1/4, within the budget
        store.clearMemory()
        let failure = await #expect(throws: ImageLoadingError.self) {
            _ = try await store.image(for: ImageRequest(url: url(0)))
        }
        #expect(
            failure
                == .decodingFailed(
                    ImageDecodingError(format: .jpeg, reason: .pixelBudgetExceeded(pixels: 120_000, budget: 119_999))))
        #expect(try await server.hits(for: "/images/0.jpg") == 1)
        #expect(FileManager.default.fileExists(atPath: store.disk.fileURL(for: url(0)).path))
    }
}
