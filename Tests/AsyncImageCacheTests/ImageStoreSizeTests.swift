import Foundation
import Testing

@testable import AsyncImageCache

/// Sizes before pixels: the natural size is known synchronously, across relaunch, without decoding.
@Suite struct ImageStoreSizeTests {
    let sizes = [
        PixelSize(width: 1024, height: 768), PixelSize(width: 300, height: 500), PixelSize(width: 64, height: 64),
    ]

    /// Loads every sample through a store over a real server, then stops the server.
    private func warmCache(root: URL, attributes: (any ExtendedAttributeStoring)? = nil) async throws -> [URL] {
        let images = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(sizes, into: images.url)
        let server = try await TestHTTPServer(serving: images.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: root) { configuration in
            if let attributes { configuration.extendedAttributes = attributes }
        }
        var urls: [URL] = []
        for name in names {
            let url = server.url("/images/\(name)")
            _ = try await store.image(for: ImageRequest(url: url, targetWidth: 50))
            store.waitForDiskMaintenance()
            urls.append(url)
        }
        return urls
    }

    /// A relaunched store over a warm cache whose first image's file lost its attribute, with a gate on
    /// the store's attribute writes; the folder goes when `root` does.
    private func relaunchedWithALostAttribute() async throws -> (
        root: TemporaryDirectory, url: URL, attributes: PixelSizeWriteGate, store: ImageStore, path: String
    ) {
        let root = TemporaryDirectory("root")
        let url = try #require(try await warmCache(root: root.url).first)
        let attributes = PixelSizeWriteGate()
        let relaunched = try ImageStore.makeForTesting(root: root.url) { $0.extendedAttributes = attributes }
        let path = relaunched.disk.filePath(for: url)
        FileExtendedAttributes().removeValue(named: PixelSizeAttribute.name, atPath: path)
        return (root, url, attributes, relaunched, path)
    }

    @Test func aRelaunchedStoreAnswersEverySizeFromTheAttributeWithTheServerDown() async throws {
        let root = TemporaryDirectory("root")
        let urls = try await warmCache(root: root.url)
        let relaunched = try ImageStore.makeForTesting(root: root.url)
        #expect(urls.map { relaunched.cachedPixelSize(for: $0) } == sizes.map(\.cgSize))
        #expect(relaunched.statistics.sizesFromAttribute == sizes.count)
        #expect(relaunched.statistics.sizesFromHeader == 0)
        #expect(relaunched.statistics.decodes == 0)
        // A second read is a memory hit.
        _ = relaunched.cachedPixelSize(for: urls[0])
        #expect(relaunched.statistics.sizesFromMemory == 1)
    }

    @Test func strippedAttributesAreRecoveredFromTheHeaderAndRewritten() async throws {
        let root = TemporaryDirectory("root")
        let urls = try await warmCache(root: root.url)
        let relaunched = try ImageStore.makeForTesting(root: root.url)
        let disk = relaunched.disk
        for url in urls {
            FileExtendedAttributes().removeValue(named: PixelSizeAttribute.name, atPath: disk.fileURL(for: url).path)
            #expect(disk.pixelSize(for: url) == nil)
        }
        #expect(urls.map { relaunched.cachedPixelSize(for: $0) } == sizes.map(\.cgSize))
        #expect(relaunched.statistics.sizesFromHeader == sizes.count)
        #expect(relaunched.statistics.decodes == 0)
        relaunched.waitForDiskMaintenance()  // written back on the disk queue
        #expect(urls.map { disk.pixelSize(for: $0) } == sizes)  // repaired
    }

    /// A lookup that reads the header of a cached image whose attribute was lost answers without waiting
    /// for the attribute's write, which goes on the disk queue (lookups come from layout): with that write
    /// parked, the lookup returns the size, and the attribute is there once the write is let go.
    @Test func aLookupThatRepairsTheAttributeDoesNotWaitForItsWrite() async throws {
        let (root, url, attributes, relaunched, path) = try await relaunchedWithALostAttribute()
        defer { withExtendedLifetime(root) {} }  // the folder stays until the test ends

        attributes.gate.arm()
        defer { attributes.gate.open() }  // never leaves the disk queue parked
        let answered = LockedBox<CGSize??>(nil)
        Thread.detachNewThread {
            let size = relaunched.cachedPixelSize(for: url)
            answered.withLock { $0 = .some(size) }
        }
        try await waitUntil { attributes.gate.parkedCount == 1 }  // the write, parked
        // Before, the lookup itself made the write, and waited at the gate with it.
        for _ in 0..<1000 where answered.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(answered.withLock { $0 } == .some(sizes[0].cgSize), "the lookup waited for the attribute's write")
        #expect(FileExtendedAttributes().value(named: PixelSizeAttribute.name, atPath: path) == nil)

        attributes.gate.open()
        relaunched.waitForDiskMaintenance()
        let written = FileExtendedAttributes().value(named: PixelSizeAttribute.name, atPath: path)
        #expect(written.flatMap(PixelSizeAttribute.decode) == sizes[0])
    }

    /// Another process sharing the folder may rename a new image into an entry's place while a lookup
    /// repairs the attribute of the file it read. The repair lands on the file it read, never on the new
    /// one, whose own size would otherwise be overwritten and trusted at every later launch.
    /// (One case at a time: a parked load holds one of the few threads that run tasks.)
    @Test(.serialized, arguments: ["size lookup", "load"])
    func aRepairNeverLandsOnAFileThatReplacedTheOneItRead(by lookup: String) async throws {
        let (root, url, attributes, relaunched, path) = try await relaunchedWithALostAttribute()

        attributes.gate.arm()  // parks the repair, after it has read the old file
        let repairing = Task.detached {
            guard lookup == "load" else {
                // Layout's synchronous lookup, on a thread of its own; its write-back parks on the disk queue.
                return await withCheckedContinuation { continuation in
                    Thread.detachNewThread { continuation.resume(returning: relaunched.cachedPixelSize(for: url)) }
                }
            }
            return try await relaunched.image(for: ImageRequest(url: url, targetWidth: 50)).pixelSize.cgSize
        }
        try await waitUntil { attributes.gate.parkedCount == 1 }
        // The other process's write: a new image, with its own attribute, renamed into place.
        let newSize = PixelSize(width: 300, height: 500)
        let temporary = path + ".other-process"
        try SampleImages.jpeg(width: newSize.width, height: newSize.height).write(to: URL(fileURLWithPath: temporary))
        try FileExtendedAttributes().setValue(
            PixelSizeAttribute.encode(newSize), named: PixelSizeAttribute.name, atPath: temporary)
        #expect(rename(temporary, path) == 0)
        attributes.gate.open()
        let answered = try await repairing.value
        // The load read the old file's caching facts with its bytes, before the repair: it shows the old
        // image (1024x768 at 50 px wide), which they go with.
        #expect(answered == (lookup == "load" ? CGSize(width: 50, height: 38) : sizes[0].cgSize))

        let onDisk = FileExtendedAttributes().value(named: PixelSizeAttribute.name, atPath: path)
        #expect(onDisk.flatMap(PixelSizeAttribute.decode) == newSize, "the old file's size went onto the new file")
        let relaunchedAgain = try ImageStore.makeForTesting(root: root.url)
        #expect(relaunchedAgain.cachedPixelSize(for: url) == newSize.cgSize)
    }

    @Test func aFileSystemWithoutAttributesStillAnswersCorrectSizes() async throws {
        let root = TemporaryDirectory("root")
        let urls = try await warmCache(root: root.url, attributes: RefusingAttributes())
        let relaunched = try ImageStore.makeForTesting(root: root.url) { $0.extendedAttributes = RefusingAttributes() }
        #expect(urls.map { relaunched.cachedPixelSize(for: $0) } == sizes.map(\.cgSize))
        #expect(relaunched.statistics.sizesFromAttribute == 0)
        #expect(relaunched.statistics.sizesFromHeader == sizes.count)
    }

    @Test func sizesAreReportedAsDisplayedWithEXIFOrientationApplied() async throws {
        let root = TemporaryDirectory("root")
        let server = try await TestHTTPServer(serving: Fixtures.root.appendingPathComponent("exif-orientation"))
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: root.url)
        let url = server.url("/images/Landscape_6.jpg")  // stored 1200x1800, rotated to display
        let image = try await store.image(for: ImageRequest(url: url, targetWidth: 180))
        store.waitForDiskMaintenance()
        #expect(image.pixelSize == PixelSize(width: 180, height: 120))
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 1800, height: 1200))
        let relaunched = try ImageStore.makeForTesting(root: root.url)
        #expect(relaunched.cachedPixelSize(for: url) == CGSize(width: 1800, height: 1200))
        #expect(relaunched.disk.pixelSize(for: url) == PixelSize(width: 1800, height: 1200))
    }

    @Test func anUnknownURLHasNoSize() throws {
        let root = TemporaryDirectory("root")
        let store = try ImageStore.makeForTesting(root: root.url)
        #expect(store.cachedPixelSize(for: URL(string: "https://127.0.0.1:9/never.jpg")!) == nil)
        #expect(store.cachedPixelSize(for: URL(fileURLWithPath: "/nonexistent/a.jpg")) == nil)
    }

    @Test func aLocalFileSizeComesFromItsHeader() throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 640, height: 480)], into: folder.url)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        #expect(
            store.cachedPixelSize(for: folder.url.appendingPathComponent("0.jpg")) == CGSize(width: 640, height: 480))
        #expect(store.statistics.decodes == 0)
    }

    /// The attribute is a hint written by the store; a value no image header could hold (wider than
    /// the header reader accepts) is garbage, and the file's header answers instead.
    @Test func anAttributeHoldingASizeNoHeaderCanHaveIsNotTrusted() throws {
        let root = TemporaryDirectory("root")
        let store = try ImageStore.makeForTesting(root: root.url)
        let url = URL(string: "https://127.0.0.1:9/garbage-attribute.jpg")!
        let size = PixelSize(width: 64, height: 48)
        try store.disk.store(try SampleImages.jpeg(width: size.width, height: size.height), pixelSize: size, for: url)
        let garbage: [UInt8] = [0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0x7F]  // 2147483647x2147483647
        try FileExtendedAttributes().setValue(
            garbage, named: PixelSizeAttribute.name, atPath: store.disk.filePath(for: url))

        #expect(store.cachedPixelSize(for: url) == size.cgSize)
        store.waitForDiskMaintenance()  // written back on the disk queue
        #expect(store.disk.pixelSize(for: url) == size, "the attribute is repaired")
    }

    /// `cachedPixelSize(for:)` runs during layout: a `file:` URL naming a FIFO must not block the
    /// caller until some other process writes to it.
    @Test func aFIFOHasNoSizeAndDoesNotBlockTheCaller() async throws {
        let folder = TemporaryDirectory("fifo")
        let path = folder.url.appendingPathComponent("pipe.jpg").path
        #expect(mkfifo(path, 0o600) == 0)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let answer = LockedBox<CGSize??>(nil)
        DispatchQueue.global().async {
            let size = store.cachedPixelSize(for: URL(fileURLWithPath: path))
            answer.withLock { $0 = .some(size) }
        }
        // A reader that answers ends the wait at once; only one blocked in `open` for want of a writer (it would
        // wait for ever) reaches the deadline, generous so that a loaded machine's late thread is not taken for it.
        let deadline = ContinuousClock.now + .seconds(60)
        while answer.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let answered = answer.withLock { $0 }
        if answered == nil {
            // Release the blocked reader: a writer that opens and closes the FIFO gives it end-of-file.
            let writer = open(path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
        }
        #expect(answered != nil, "cachedPixelSize blocked opening a FIFO")
        #expect(answered == .some(nil), "a FIFO has no size")
    }
}
