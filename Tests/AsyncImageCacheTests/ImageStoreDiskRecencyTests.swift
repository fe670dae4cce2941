import Foundation
import Testing

@testable import AsyncImageCache

/// The disk tier trims the least recently used files first, and an image that memory serves is in use
/// even though its file is never read.
@Suite struct ImageStoreDiskRecencyTests {
    /// The ways a memory tier serves an image without reading its file.
    enum MemoryHit: String, CaseIterable, Sendable {
        /// `cachedImage(for:)` answers from the variants.
        case cachedImage
        /// A load answered by the variant in memory.
        case load
        /// A load of another look of the image, decoded from the original bytes in memory.
        case otherLook
        /// `cachedOriginalBytes(for:)` answers from the originals.
        case originalBytes
    }

    @Test(arguments: MemoryHit.allCases)
    func anImageServedFromMemoryOutlivesColderFilesOnDisk(hit: MemoryHit) async throws {
        let images = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 120, height: 80), count: 4), into: images.url)
        let server = try await TestHTTPServer(serving: images.url)
        defer { server.stop() }
        let urls = names.map { server.url("/images/\($0)") }
        // What the four files take on disk, as the budget counts them (with the response's caching facts in
        // their attributes): measured in a store with room for all of them.
        let measuring = TemporaryDirectory("measuring")
        let measured = try ImageStore.makeForTesting(root: measuring.url)
        var byteCounts: [Int] = []
        for url in urls {
            _ = try await measured.image(for: ImageRequest(url: url, targetWidth: 60))
            measured.waitForDiskMaintenance()
            byteCounts.append(try #require(CountedSize.ofFile(atPath: measured.disk.filePath(for: url))))
        }
        let root = TemporaryDirectory("root")
        // Room for the four files but one byte: the fourth write removes exactly one of the others.
        let store = try ImageStore.makeForTesting(root: root.url) {
            $0.diskByteLimit = byteCounts.reduce(0, +) - 1
        }
        let (hot, newcomer) = (urls[0], urls[3])
        for url in urls.dropLast() {
            _ = try await store.image(for: ImageRequest(url: url, targetWidth: 60))
        }
        store.waitForDiskMaintenance()
        // The hot image was fetched first, long ago; the other two later.
        for (offset, url) in urls.dropLast().enumerated() {
            try FileManager.default.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-Double(3 - offset) * 3600)],
                ofItemAtPath: store.disk.filePath(for: url))
        }

        store.resetStatistics()
        let request = ImageRequest(url: hot, targetWidth: 60)
        switch hit {
        case .cachedImage:
            #expect(store.cachedImage(for: request) != nil)
        case .load:
            _ = try await store.image(for: request)
            #expect(store.statistics.variantHits == 1)
        case .otherLook:
            _ = try await store.image(for: ImageRequest(url: hot, targetWidth: 60, cornerRadius: 8))
            #expect(store.statistics.originalMemoryHits == 1)
        case .originalBytes:
            #expect(store.cachedOriginalBytes(for: hot) != nil)
        }
        #expect(store.statistics.diskHits == 0 && store.statistics.sourceFetches == 0)

        _ = try await store.image(for: ImageRequest(url: newcomer, targetWidth: 60))
        store.waitForDiskMaintenance()
        let kept = urls.map { FileManager.default.fileExists(atPath: store.disk.filePath(for: $0)) }
        #expect(kept == [true, false, true, true], "hot, coldest, colder, newcomer")
    }

    @Test func aHotLoopOfHitsMarksTheFileOnceAMinute() {
        let throttle = DiskUseThrottle()
        let start: UInt64 = 5_000_000_000
        let millisecond: UInt64 = 1_000_000
        #expect(throttle.claim(at: start))
        #expect((1...1000).allSatisfy { !throttle.claim(at: start + UInt64($0) * millisecond) })
        #expect(!throttle.claim(at: start + DiskUseThrottle.interval - 1))
        #expect(throttle.claim(at: start + DiskUseThrottle.interval))
        #expect(!throttle.claim(at: start + DiskUseThrottle.interval + millisecond))
    }
}
