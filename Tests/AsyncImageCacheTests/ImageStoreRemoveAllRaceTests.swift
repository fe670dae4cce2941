import Foundation
import Testing

@testable import AsyncImageCache

/// `removeAll()` deletes every entry for good: a load that was already fetching when it ran still
/// delivers its image, but does not write the entry back into the disk tier or the memory tiers.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreRemoveAllRaceTests {
    @Test func aLoadInFlightDuringRemoveAllDoesNotRecreateItsEntry() async throws {
        let folder = TemporaryDirectory("remove-all-race")
        let loader = GatedLoader(bytes: try SampleImages.jpeg(width: 64, height: 48))
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let load = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 32)) }
        try await waitUntil { loader.hasStarted }
        store.removeAll()
        loader.open()
        #expect(try await load.value.pixelSize.width == 32)
        store.waitForDiskMaintenance()
        #expect(store.diskFileNames.isEmpty, "removeAll() ran, yet the disk tier holds \(store.diskFileNames)")
        #expect(store.cachedOriginalBytes(for: url) == nil)
    }

    @Test func aRemovedImageIsForgottenInBothTiersAndFetchedAgain() async throws {
        let folder = TemporaryDirectory("remove-image")
        let images = TemporaryDirectory("remove-image-images")
        for name in ["a.jpg", "b.jpg"] {
            try SampleImages.jpeg(width: 64, height: 48).write(to: images.url.appendingPathComponent(name))
        }
        let server = try await TestHTTPServer(serving: images.url)
        let store = try ImageStore.makeForTesting(root: folder.url)
        let (a, b) = (server.url("/images/a.jpg"), server.url("/images/b.jpg"))
        for url in [a, b] { _ = try await store.image(for: ImageRequest(url: url, targetWidth: 32)) }
        store.waitForDiskMaintenance()
        // The avatar changes behind the same URL (64x64 now); its headers say nothing.
        try SampleImages.jpeg(width: 64, height: 64).write(to: images.url.appendingPathComponent("a.jpg"))
        store.removeImage(for: a)
        #expect(store.cachedImage(for: ImageRequest(url: a, targetWidth: 32)) == nil)
        #expect(store.cachedOriginalBytes(for: a) == nil)
        #expect(store.cachedPixelSize(for: a) == nil)
        #expect(store.diskFileNames == [store.disk.fileURL(for: b).lastPathComponent])
        // The other image stays, and the removed one is fetched anew.
        #expect(store.cachedImage(for: ImageRequest(url: b, targetWidth: 32)) != nil)
        #expect(try await store.image(for: ImageRequest(url: a, targetWidth: 32)).pixelSize.height == 32)
        #expect(try await server.hits(for: "/images/a.jpg") == 2)
        #expect(store.cachedPixelSize(for: a) == CGSize(width: 64, height: 64))
    }

    @Test func aLoadInFlightDuringRemoveImageKeepsNothing() async throws {
        let folder = TemporaryDirectory("remove-image-race")
        let loader = GatedLoader(bytes: try SampleImages.jpeg(width: 64, height: 48))
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let load = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 32)) }
        try await waitUntil { loader.hasStarted }
        store.removeImage(for: url)
        loader.open()
        #expect(try await load.value.pixelSize.width == 32)
        store.waitForDiskMaintenance()
        #expect(store.diskFileNames.isEmpty, "removeImage ran, yet the disk tier holds \(store.diskFileNames)")
        #expect(store.cachedOriginalBytes(for: url) == nil)
        #expect(store.cachedImage(for: ImageRequest(url: url, targetWidth: 32)) == nil)
    }

    /// The window between a finished load's generation check and its memory inserts: `removeAll()`
    /// runs while the load writes its bytes to disk, after the check and before the variant goes in.
    @Test func aRemoveAllWhileALoadKeepsItsImageLeavesNothingInMemory() async throws {
        let folder = TemporaryDirectory("remove-all-keeping")
        let images = TemporaryDirectory("remove-all-keeping-images")
        try SampleImages.jpeg(width: 64, height: 48).write(to: images.url.appendingPathComponent("a.jpg"))
        let server = try await TestHTTPServer(serving: images.url)
        let attributes = RemovingAllOnFirstWrite()
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.extendedAttributes = attributes }
        attributes.store = store
        let url = server.url("/images/a.jpg")
        let request = ImageRequest(url: url, targetWidth: 32)

        #expect(try await store.image(for: request).pixelSize.width == 32)
        // The write goes on in the background: done once the disk work is.
        store.waitForDiskMaintenance()
        #expect(attributes.hasRemovedAll)
        #expect(store.diskFileNames.isEmpty, "removeAll() ran, yet the disk tier holds \(store.diskFileNames)")
        #expect(store.cachedImage(for: request)?.pixelSize == nil, "removeAll() returned, yet memory holds the variant")
        #expect(store.cachedOriginalBytes(for: url) == nil)
    }

    /// The window between `removeAll()` raising the generation and emptying memory: a load that starts
    /// then reads the new generation, yet finds the old original still in memory.
    @Test func aLoadStartedWhileRemoveAllRunsDoesNotKeepTheOldImage() async throws {
        let folder = TemporaryDirectory("remove-all-window")
        let images = TemporaryDirectory("remove-all-window-images")
        let file = images.url.appendingPathComponent("a.jpg")
        try SampleImages.jpeg(width: 64, height: 48).write(to: file)
        let server = try await TestHTTPServer(serving: images.url)
        let decoder = GatedDecoder(open: true)
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.decoder = decoder }
        let url = server.url("/images/a.jpg")
        #expect(try await store.image(for: ImageRequest(url: url, targetWidth: 32)).pixelSize.height == 24)
        // The source changes; removeAll() is how an app drops what it has of the old image.
        try SampleImages.jpeg(width: 64, height: 64).write(to: file)
        // Many files, so that removeAll() takes a while deleting them: a load that has seen the new
        // generation must not find the old original in memory meanwhile.
        for index in 0..<300 {
            _ = FileManager.default.createFile(
                atPath: store.directory.appendingPathComponent("filler-\(index)").path, contents: Data([0]))
        }
        decoder.close()
        let generation = store.disk.generation
        // On a thread of its own, not one of Swift's few: removeAll() blocks while it deletes the files.
        let removal = Task { await onOwnThread { store.removeAll() } }
        try await waitUntil { store.disk.generation != generation }
        // Not served by the square-cornered variant in memory: it decodes, and waits at the gate.
        let rounded = ImageRequest(url: url, targetWidth: 32, cornerRadius: 4)
        let load = Task { try await store.image(for: rounded) }
        try await waitUntil { decoder.enteredCount == 2 }
        await removal.value
        decoder.open()
        _ = try await load.value

        let kept = store.cachedImage(for: rounded)?.pixelSize
        #expect(
            kept == nil || kept == PixelSize(width: 32, height: 32),
            "removeAll() returned, yet memory keeps the old image: \(String(describing: kept))")
    }

    /// A load that starts once `removeAll()` has returned does not wait for a decode of the old image that
    /// was under way: it would be handed the image `removeAll()` was called to drop.
    @Test func aLoadStartedAfterRemoveAllDoesNotJoinTheOldImagesDecode() async throws {
        let folder = TemporaryDirectory("remove-all-join")
        let images = TemporaryDirectory("remove-all-join-images")
        let file = images.url.appendingPathComponent("a.jpg")
        try SampleImages.jpeg(width: 64, height: 48).write(to: file)
        let server = try await TestHTTPServer(serving: images.url)
        defer { server.stop() }
        let decoder = GatedDecoder(open: true)
        let store = try ImageStore.makeForTesting(root: folder.url) {
            $0.decoder = decoder
            $0.decodeConcurrency = 2
        }
        let url = server.url("/images/a.jpg")
        #expect(try await store.image(for: ImageRequest(url: url, targetWidth: 32)).pixelSize.height == 24)
        try SampleImages.jpeg(width: 64, height: 64).write(to: file)
        // A load of the old original in memory, held in its decode.
        decoder.close()
        let rounded = ImageRequest(url: url, targetWidth: 32, cornerRadius: 4)
        let underWay = Task { try await store.image(for: rounded) }
        try await waitUntil { decoder.enteredCount == 2 }
        store.removeAll()
        let after = Task { try await store.image(for: rounded) }
        // Joined, it waits without a decode of its own; on its own, it fetches the new bytes and decodes.
        try await waitUntil { store.variantRuns.waiterCount(for: rounded) == 2 || decoder.enteredCount == 3 }
        decoder.open()
        #expect(try await underWay.value.pixelSize.height == 24)  // under way: delivered, not kept
        let height = try await after.value.pixelSize.height
        #expect(height == 32, "a load started after removeAll() got the old image, 32x\(height)")
    }

    /// A load that starts once `removeAll()` has returned does not share a read of the old file from the disk
    /// tier that was under way.
    @Test func aLoadStartedAfterRemoveAllDoesNotShareTheOldFilesRead() async throws {
        let folder = TemporaryDirectory("remove-all-read")
        let images = TemporaryDirectory("remove-all-read-images")
        let file = images.url.appendingPathComponent("a.jpg")
        try SampleImages.jpeg(width: 64, height: 48).write(to: file)
        let server = try await TestHTTPServer(serving: images.url)
        defer { server.stop() }
        let attributes = PixelSizeReadGate()
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.extendedAttributes = attributes }
        let url = server.url("/images/a.jpg")
        #expect(try await store.image(for: ImageRequest(url: url, targetWidth: 32)).pixelSize.height == 24)
        store.waitForDiskMaintenance()
        store.clearMemory()
        try SampleImages.jpeg(width: 64, height: 64).write(to: file)
        // A load that has read the old file, held where it looks at the file's size attribute.
        attributes.arm()
        let underWay = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 32)) }
        try await waitUntil { attributes.isParked }
        store.removeAll()
        let after = Task { try await store.image(for: ImageRequest(url: url, targetWidth: 16)) }
        // Joined, it waits for the held read; on its own, it downloads the new bytes.
        try await waitUntil {
            store.fetchRuns.waiterCount(for: url.cacheKey) == 2 || store.statistics.sourceFetches == 2
        }
        attributes.open()
        #expect(try await underWay.value.pixelSize.height == 24)  // under way: delivered, not kept
        let height = try await after.value.pixelSize.height
        #expect(height == 16, "a load started after removeAll() got the old image, 16x\(height)")
    }

    /// A size looked up in the disk tier while `removeAll()` runs is answered, but not remembered: the
    /// next lookup finds nothing, as after any `removeAll()`.
    @Test func aSizeReadWhileRemoveAllRunsIsNotRemembered() async throws {
        let folder = TemporaryDirectory("remove-all-size")
        let images = TemporaryDirectory("remove-all-size-images")
        try SampleImages.jpeg(width: 64, height: 48).write(to: images.url.appendingPathComponent("a.jpg"))
        let server = try await TestHTTPServer(serving: images.url)
        defer { server.stop() }
        let attributes = PixelSizeReadGate(parksAfterReading: true)
        let store = try ImageStore.makeForTesting(root: folder.url) { $0.extendedAttributes = attributes }
        let url = server.url("/images/a.jpg")
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 32))
        store.waitForDiskMaintenance()
        store.clearMemory()
        // A lookup that has read the size from the file's attribute, held before it remembers it.
        attributes.arm()
        let lookup = Task { await onOwnThread { store.cachedPixelSize(for: url) } }
        try await waitUntil { attributes.isParked }
        store.removeAll()
        attributes.open()
        #expect(await lookup.value == CGSize(width: 64, height: 48))  // read before: answered
        let size = store.cachedPixelSize(for: url)
        #expect(size == nil, "removeAll() returned, yet the size is remembered: \(String(describing: size))")
    }

    /// Prefetching a request again after `removeAll()` prefetches it afresh, though a prefetch of it begun
    /// before is still under way: that one keeps nothing, and the row would find no image in memory.
    @Test func aPrefetchStartedAgainAfterRemoveAllKeepsItsImage() async throws {
        let folder = TemporaryDirectory("remove-all-prefetch")
        let images = TemporaryDirectory("remove-all-prefetch-images")
        try SampleImages.jpeg(width: 64, height: 48).write(to: images.url.appendingPathComponent("a.jpg"))
        let server = try await TestHTTPServer(serving: images.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url)
        let path = "/held/prefetch/images/a.jpg"
        let request = ImageRequest(url: server.url(path), targetWidth: 32)
        store.startPrefetching([request])
        try await waitUntil { try await server.hits(for: path) == 1 }
        store.removeAll()
        store.startPrefetching([request])
        try await server.release("prefetch")
        try await waitUntil { store.prefetches.withLock { $0.running.isEmpty } }
        let kept = store.cachedImage(for: request)?.pixelSize
        #expect(
            kept == PixelSize(width: 32, height: 24),
            "the prefetch started after removeAll() left nothing in memory: \(String(describing: kept))")
    }

    /// Two stores with one name share their folder: a `removeAll()` of one also drops a write the other
    /// began before it. Before, the other's load fetched first and wrote its file after, and the store
    /// that had just emptied its tier served those bytes from disk.
    @Test func aRemoveAllOfOneStoreDropsAWriteAnotherStoreOnTheFolderBeganBefore() async throws {
        try await Self.expectNothingKeptOfALoadInAnotherStore(during: "remove-all") { store, _ in store.removeAll() }
    }

    /// As for `removeAll()`: a `removeImage(for:)` of one store also keeps a load of the URL that the other
    /// store on the folder began before it from writing the file back (the old avatar, downloaded before
    /// the user changed it). Before, the file was back once the load ended, and either store served it.
    @Test func aRemoveImageOfOneStoreKeepsALoadAnotherStoreBeganBeforeOffTheDisk() async throws {
        try await Self.expectNothingKeptOfALoadInAnotherStore(during: "remove-image") { store, url in
            store.removeImage(for: url)
        }
    }

    /// Starts a load in a second store on one folder, runs `forget` on the first while the load fetches,
    /// then lets the load end: it is delivered, and leaves nothing on disk.
    private static func expectNothingKeptOfALoadInAnotherStore(
        during label: String, _ forget: (ImageStore, URL) -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let folder = TemporaryDirectory("\(label)-two-stores")
        let loader = GatedLoader(bytes: try SampleImages.jpeg(width: 64, height: 48))
        let forgetting = try ImageStore.makeForTesting(root: folder.url)
        let other = try ImageStore.makeForTesting(root: folder.url) { $0.dataLoader = loader }
        let url = URL(string: "https://images.example.com/photo.jpg")!
        let load = Task { try await other.image(for: ImageRequest(url: url, targetWidth: 32)) }
        try await waitUntil { loader.hasStarted }
        forget(forgetting, url)
        loader.open()
        let delivered = try await load.value.pixelSize
        #expect(delivered == PixelSize(width: 32, height: 24), "delivered all the same", sourceLocation: sourceLocation)
        other.waitForDiskMaintenance()
        #expect(
            forgetting.diskFileNames.isEmpty, "the disk tier holds \(forgetting.diskFileNames)",
            sourceLocation: sourceLocation)
        #expect(forgetting.cachedOriginalBytes(for: url) == nil, sourceLocation: sourceLocation)
    }

    /// A write that a store queued, checked at its commit against the counts of replacements, is checked
    /// against them also once that store is gone: another store on the folder may have replaced the image
    /// since (here its count is raised as a revalidation's new image raises it). Before, a write whose
    /// store had been released was taken as current, and put the old bytes back.
    @Test func aWriteOfAReleasedStoreStillYieldsToAReplacementInAnotherStore() async throws {
        let folder = TemporaryDirectory("replacement-released-store")
        let staying = try ImageStore.makeForTesting(root: folder.url)
        var released: ImageStore? = try ImageStore.makeForTesting(root: folder.url)
        let url = URL(string: "https://images.example.com/avatar.jpg")!
        let bytes = try SampleImages.jpeg(width: 64, height: 48)
        let original = OriginalImage(data: bytes, header: try ImageHeader.parse(bytes), fileStamp: nil)
        let gate = try await ImageStoreDiskCommitTests.holdDiskQueue(of: staying.disk)
        defer { gate.signal() }  // once more when the test ends early: the semaphore is waited on once
        let queued = try #require(released).keepRemote(
            original, metadata: HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 3600)), for: url,
            generation: staying.disk.generation,
            replacement: staying.replacementCount(of: url), inBackground: true)
        #expect(queued)
        released = nil
        _ = staying.disk.ifCurrent(staying.disk.generation) {
            staying.replacements.withLock { $0.raise(forKey: url.cacheKey) }
        }
        gate.signal()
        staying.waitForDiskMaintenance()
        #expect(!staying.disk.contains(url), "the released store's write landed after the image was replaced")
    }
}

/// The real attributes, except that once armed the next read of the pixel-size attribute waits, on its
/// thread, until ``open()``: parks a load that has just read a file of the disk tier (or, with
/// `parksAfterReading`, a size lookup that has just read the attribute).
final class PixelSizeReadGate: FileAttributesHook, Sendable {
    private let gate = ParkingGate()
    private let parksAfterReading: Bool

    init(parksAfterReading: Bool = false) {
        self.parksAfterReading = parksAfterReading
    }

    var isParked: Bool { gate.parkedCount > 0 }

    func arm() {
        gate.arm()
    }

    func open() {
        gate.open()
    }

    func read(named name: String, atPath path: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) -> Int?
    {
        if name == PixelSizeAttribute.name && !parksAfterReading { gate.parkIfArmed() }
        let length = FileExtendedAttributes().read(named: name, atPath: path, into: buffer)
        if name == PixelSizeAttribute.name && parksAfterReading { gate.parkIfArmed() }
        return length
    }
}

/// The real attributes, except that the first one set (by the disk write of a finished load) first
/// calls `removeAll()` on `store`, as another thread may at that moment.
final class RemovingAllOnFirstWrite: FileAttributesHook, @unchecked Sendable {
    // `target` and `removed` are only touched while holding `lock`.
    private let lock = NSLock()
    private weak var target: ImageStore?
    private var removed = false

    var store: ImageStore? {
        get { lock.withLock { target } }
        set { lock.withLock { target = newValue } }
    }

    var hasRemovedAll: Bool { lock.withLock { removed } }

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        removeAllIfFirst()
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
    }

    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        removeAllIfFirst()
        try FileExtendedAttributes().setValue(value, named: name, onDescriptor: descriptor)
    }

    private func removeAllIfFirst() {
        let store = lock.withLock { () -> ImageStore? in
            defer { removed = true }
            return removed ? nil : target
        }
        store?.removeAll()
    }
}

/// A loader whose fetches wait until ``open()`` is called, then answer `bytes` with a long lifetime.
/// It notes the task priority its last fetch started at and the one it has while it waits.
final class GatedLoader: DataLoading, @unchecked Sendable {
    // Every `var` is only touched while holding `lock`.
    private let lock = NSLock()
    private var started = false
    private var loads = 0
    private var isOpen = false
    private var priorities: (atStart: TaskPriority, waiting: TaskPriority)?
    private let bytes: Data

    init(bytes: Data) {
        self.bytes = bytes
    }

    var hasStarted: Bool { lock.withLock { started } }

    /// How many loads have started.
    var loadCount: Int { lock.withLock { loads } }

    /// The task priority the last fetch started at, and the one it had when it last looked at the gate.
    var fetchPriorities: (atStart: TaskPriority, waiting: TaskPriority)? { lock.withLock { priorities } }

    func open() {
        lock.withLock { isOpen = true }
    }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        let atStart = Task.currentPriority
        lock.withLock {
            started = true
            loads += 1
            priorities = (atStart, atStart)
        }
        while !lock.withLock({
            priorities = (atStart, Task.currentPriority)
            return isOpen
        }) {
            do { try await Task.sleep(for: .milliseconds(5)) } catch { throw .cancelled }
        }
        return bytes
    }

    func loadData(
        for url: URL, revalidating validators: HTTPCachePolicy?
    ) async throws(ImageLoadingError) -> ConditionalLoadResult {
        .modified(try await loadData(for: url), HTTPCachePolicy(maxAge: 3600))
    }
}
