import Foundation
import Testing

@testable import AsyncImageCache

/// The store's memory tiers and maintenance calls.
@Suite struct ImageStoreMemoryTests {
    @Test func bothTiersEvictByCountInLeastRecentlyUsedOrder() async throws {
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 64, height: 48), count: 3), into: folder.url)
        let urls = names.map { folder.url.appendingPathComponent($0) }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.memoryCountLimit = 2
        }
        for url in urls.prefix(2) { _ = try await store.image(for: ImageRequest(url: url)) }
        #expect(store.cachedImage(for: ImageRequest(url: urls[0])) != nil)  // urls[0] is now most recent
        _ = store.cachedOriginalBytes(for: urls[0])
        _ = try await store.image(for: ImageRequest(url: urls[2]))
        #expect(store.variants.keysByRecency == [ImageRequest(url: urls[0]), ImageRequest(url: urls[2])])
        #expect(store.originals.keysByRecency == [urls[0].cacheKey, urls[2].cacheKey])
    }

    @Test func bothTiersEvictByBytes() async throws {
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 100, height: 100), count: 3), into: folder.url)
        let urls = names.map { folder.url.appendingPathComponent($0) }
        let fileBytes = try urls.map { try Data(contentsOf: $0).count }
        // Room for two decoded 100x100 variants (40,000 bytes each) but not three.
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.memoryByteLimit = 2 * 40_000 + 100
        }
        for url in urls { _ = try await store.image(for: ImageRequest(url: url)) }
        #expect(store.variants.count == 2)
        #expect(store.variants.totalCost == 80_000)
        #expect(store.cachedImage(for: ImageRequest(url: urls[0])) == nil)
        #expect(store.originals.totalCost == fileBytes.reduce(0, +))  // compressed originals are small
    }

    @Test func clearMemoryKeepsTheDiskAndRemoveAllEmptiesBoth() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 120, height: 90)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let request = ImageRequest(url: server.url("/images/0.jpg"))
        _ = try await store.image(for: request)
        store.waitForDiskMaintenance()
        store.clearMemory()
        #expect(store.cachedImage(for: request) == nil)
        #expect(store.cachedPixelSize(for: request.url) == CGSize(width: 120, height: 90))  // from the disk tier
        _ = try await store.image(for: request)
        #expect(store.statistics.diskHits == 1)
        #expect(try await server.hits(for: "/images/0.jpg") == 1)
        store.removeAll()
        #expect(store.diskFileNames.isEmpty)
        #expect(store.cachedPixelSize(for: request.url) == nil)
    }

    @Test func evictExpiredRemovesOldDiskEntries() async throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 20, height: 20)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let url = server.url("/images/0.jpg")
        _ = try await store.image(for: ImageRequest(url: url))
        store.waitForDiskMaintenance()
        #expect(store.evictExpired(maxAge: 3600) == 0)
        let file = store.disk.fileURL(for: url)
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: file.path)
        #expect(store.evictExpired(maxAge: 3600) == 1)
        #expect(store.diskFileNames.isEmpty)
    }

    /// Among them a KELVIN SIGN (U+212A), which Swift's string comparison takes for "K": the name is checked
    /// as bytes, as the folder is named.
    @Test(arguments: [
        "a/b", "..", "../escape", "", ".", "a\\b", "name with space", String(repeating: "n", count: 256), "\u{212A}",
        "caf\u{212A}e",
    ])
    func aStoreNameThatIsNotAPlainFolderNameIsRejected(name: String) {
        #expect(throws: ImageStore.ConfigurationError.invalidName(name)) {
            try ImageStore(configuration: ImageStore.Configuration(name: name))
        }
    }

    /// The longest name a folder may have works: the store keeps its files in that folder.
    @Test func aStoreNameOfTheLongestFileNameKeepsItsFilesOnDisk() async throws {
        let root = TemporaryDirectory("root")
        var configuration = ImageStore.Configuration(name: String(repeating: "n", count: 255))
        configuration.rootDirectory = root.url
        let store = try ImageStore(configuration: configuration)
        let png = try SampleImages.png(width: 4, height: 3)
        try store.disk.store(
            png, pixelSize: PixelSize(width: 4, height: 3), for: URL(string: "https://example.com/a.png")!)
        #expect(store.diskUsage().fileCount == 1)
    }

    /// In this process's own environment; the CLI tests run children with `XDG_CACHE_HOME` unset, empty
    /// and relative. (Before, this read a relative or empty `XDG_CACHE_HOME` as the folder, and took the
    /// account's home over `HOME`: it failed under `XDG_CACHE_HOME=cache`, or with `HOME` pointed elsewhere.)
    @Test func theDefaultFolderFollowsXDGCacheHome() {
        let configuration = ImageStore.Configuration(name: "thumbs")
        let environment = ProcessInfo.processInfo.environment
        func absolute(_ variable: String) -> String? {
            environment[variable].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0).path : nil }
        }
        let home = absolute("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path
        let expectedRoot =
            absolute("XDG_CACHE_HOME") ?? URL(fileURLWithPath: home).appendingPathComponent(".cache").path
        #expect(configuration.directory.path == expectedRoot + "/AsyncImageCache/thumbs")
    }

    @Test func theRecommendedBudgetScalesWithTheMemoryThisProcessMayUse() {
        let physical = ProcessInfo.processInfo.physicalMemory
        let usable = ImageStore.usableMemoryBytes()
        #if os(Linux)
        #expect(usable == min(physical, ControlGroupMemoryLimit.bytes() ?? physical))
        #else
        #expect(usable == physical)
        #endif
        let expected = min(max(Int(usable / 16), 64 << 20), 512 << 20, Int(usable / 8))
        #expect(ImageStore.recommendedMemoryByteLimit() == expected)
        let pixels = min(max(Int(usable / 16), 1 << 20), 64 << 20)
        #expect(ImageStore.recommendedPixelBudget() == pixels)
        #expect(ImageStore.Configuration(name: "budget").pixelBudget == pixels)
    }
}
