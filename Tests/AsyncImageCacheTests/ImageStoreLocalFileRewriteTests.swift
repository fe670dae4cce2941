import Foundation
import Testing

@testable import AsyncImageCache

/// A local file read while another program rewrites it in place: the load reads it again at its new
/// version, instead of failing on, or keeping, the bytes it caught halfway.
@Suite struct ImageStoreLocalFileRewriteTests {
    private static let photo = try! SampleImages.jpeg(width: 300, height: 200)
    private static let portrait = try! SampleImages.jpeg(width: 160, height: 240, seed: 5)

    /// The outcome of a load of `request`, error included.
    private func outcome(
        of request: ImageRequest, in store: ImageStore
    ) async -> Result<PlatformImage, ImageLoadingError> {
        do throws(ImageLoadingError) {
            return .success(try await store.image(for: request))
        } catch {
            return .failure(error)
        }
    }

    /// The outcome of a load of `request` that must end while another load's decode is held; when it waits
    /// for that decode instead, `waitUntil` records the issue and this returns `.cancelled` rather than hang.
    private func outcomeWhileADecodeIsHeld(
        of request: ImageRequest, in store: ImageStore
    ) async throws -> Result<PlatformImage, ImageLoadingError> {
        let done = LockedBox(false)
        let load = Task {
            defer { done.withLock { $0 = true } }
            return await outcome(of: request, in: store)
        }
        try await waitUntil { done.withLock { $0 } }
        guard done.withLock({ $0 }) else { return .failure(.cancelled) }
        return await load.value
    }

    /// `photo.jpg` in `folder`, holding `contents` (`nil`: no such file yet), and a store that reads
    /// it through `loader`.
    private func makeStore(
        reading contents: Data?, through loader: some DataLoading, in folder: TemporaryDirectory
    ) throws -> (file: URL, store: ImageStore) {
        let file = folder.url.appendingPathComponent("photo.jpg")
        try contents?.write(to: file)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        return (file, store)
    }

    /// Writes `caught` where a store's load will read it, holds that load right after its read, writes
    /// `finished` over it, lets the load go and returns what it gave, with the store and its loader.
    private func loadCaughtMidRewrite(
        caught: Data, finished: Data, in folder: TemporaryDirectory
    ) async throws -> (result: Result<PlatformImage, ImageLoadingError>, store: ImageStore, loader: ParkingLoader) {
        let loader = ParkingLoader()
        defer { loader.gate.open() }
        let (file, store) = try makeStore(reading: caught, through: loader, in: folder)
        loader.gate.arm()
        let load = Task { await outcome(of: ImageRequest(url: file, targetWidth: 150), in: store) }
        try await waitUntil { loader.gate.parkedCount == 1 }
        try finished.write(to: file)
        loader.gate.open()
        return (await load.value, store, loader)
    }

    @Test func aFileCaughtHalfWrittenIsReadAgainAtItsNewVersion() async throws {
        let folder = TemporaryDirectory("rewrite")
        let photo = Self.photo
        let (result, store, loader) = try await loadCaughtMidRewrite(
            caught: photo.prefix(photo.count / 2), finished: photo, in: folder)
        #expect(try result.get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(loader.readCount == 2)
        let file = folder.url.appendingPathComponent("photo.jpg")
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 300, height: 200))
        #expect(store.cachedOriginalBytes(for: file)?.data == photo)
    }

    @Test func aFileCaughtEmptyIsReadAgainAtItsNewVersion() async throws {
        let folder = TemporaryDirectory("rewrite")
        let (result, _, loader) = try await loadCaughtMidRewrite(caught: Data(), finished: Self.photo, in: folder)
        #expect(try result.get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(loader.readCount == 2)
    }

    /// Bytes read while the file changed may mix two versions and still decode, as a picture that is
    /// neither: the load reads the file again, and delivers and keeps the new version.
    @Test func aReadThatSpannedARewriteIsReadAgainAtTheNewVersion() async throws {
        let folder = TemporaryDirectory("rewrite")
        let (photo, portrait) = (Self.photo, Self.portrait)
        let (result, store, loader) = try await loadCaughtMidRewrite(caught: photo, finished: portrait, in: folder)
        #expect(try result.get().pixelSize == PixelSize(width: 150, height: 225))
        #expect(loader.readCount == 2)
        let file = folder.url.appendingPathComponent("photo.jpg")
        #expect(
            store.cachedImage(for: ImageRequest(url: file, targetWidth: 150))?.pixelSize
                == PixelSize(width: 150, height: 225))
        #expect(store.cachedOriginalBytes(for: file)?.data == portrait)
    }

    @Test func aFileStillCutShortAfterItChangedFailsAfterTheSecondRead() async throws {
        let folder = TemporaryDirectory("rewrite")
        let photo = Self.photo
        let (result, store, loader) = try await loadCaughtMidRewrite(
            caught: photo.prefix(photo.count / 3), finished: photo.prefix(photo.count / 2), in: folder)
        guard case .failure(.decodingFailed(let error)) = result else {
            Issue.record("expected a decoding failure, got \(result)")
            return
        }
        #expect(error.reason == .truncated)
        #expect(loader.readCount == 2)
        let request = ImageRequest(url: folder.url.appendingPathComponent("photo.jpg"), targetWidth: 150)
        #expect(store.cachedImage(for: request) == nil)
    }

    @Test func aFileCutShortThatDoesNotChangeIsReadOnce() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = ParkingLoader()
        let (file, store) = try makeStore(
            reading: Self.photo.prefix(Self.photo.count / 2), through: loader, in: folder)
        let result = await outcome(of: ImageRequest(url: file, targetWidth: 150), in: store)
        guard case .failure(.decodingFailed(let error)) = result else {
            Issue.record("expected a decoding failure, got \(result)")
            return
        }
        #expect(error.reason == .truncated)
        #expect(loader.readCount == 1)
    }

    /// The file is finished after the read found it unchanged, while its bytes wait to decode.
    @Test func aFileFinishedWhileItsCutShortBytesWaitToDecodeIsReadAgain() async throws {
        let folder = TemporaryDirectory("rewrite")
        let file = folder.url.appendingPathComponent("photo.jpg")
        let half = Self.photo.prefix(Self.photo.count / 2)
        try half.write(to: file)
        let gate = GatedDecoder(holdingOnly: Data(half))
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
        }
        let load = Task { await outcome(of: ImageRequest(url: file, targetWidth: 150), in: store) }
        try await waitUntil { gate.enteredCount == 1 }
        try Self.photo.write(to: file)
        gate.open()
        #expect(try await load.value.get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(store.statistics.sourceFetches == 2)
    }

    /// A photo saved over in place while its whole, good bytes decode (an editor saving as the view
    /// loads): the load decodes the file again at its new version, and delivers and keeps that, rather
    /// than the picture the file no longer holds.
    @Test func aFileSavedOverWhileItsBytesDecodeIsDeliveredAtItsNewVersion() async throws {
        let folder = TemporaryDirectory("rewrite")
        let file = folder.url.appendingPathComponent("photo.jpg")
        try Self.photo.write(to: file)
        let gate = GatedDecoder(holdingOnly: Self.photo)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
        }
        let request = ImageRequest(url: file, targetWidth: 150)
        let load = Task { await outcome(of: request, in: store) }
        try await waitUntil { gate.enteredCount == 1 }
        try Self.portrait.write(to: file)
        gate.open()
        #expect(try await load.value.get().pixelSize == PixelSize(width: 150, height: 225))
        #expect(store.statistics.sourceFetches == 2)
        #expect(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 150, height: 225))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 160, height: 240))
        #expect(store.cachedOriginalBytes(for: file)?.data == Self.portrait)
    }

    /// Replaced by deleting it and writing a new one: the read finds no file, which is there again
    /// by the time the load looks.
    @Test func aFileGoneForAMomentWhileItIsReplacedIsReadAgain() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = RewritingLoader { read, url in
            guard read == 1 else { return nil }
            try? FileManager.default.removeItem(at: url)
            try? Self.portrait.write(to: url)
            return .fileUnavailable(path: url.path, reason: "No such file or directory")
        }
        let (file, store) = try makeStore(reading: Self.photo, through: loader, in: folder)
        let result = await outcome(of: ImageRequest(url: file, targetWidth: 150), in: store)
        #expect(try result.get().pixelSize == PixelSize(width: 150, height: 225))
        #expect(loader.readCount == 2)
    }

    /// A file rewritten after every read fails after three reads, then three more when the load tries
    /// again at the version it finds: none of those reads can be trusted.
    @Test func aFileThatKeepsChangingWhileItIsReadFails() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = RewritingLoader { read, url in
            // Larger every time, so each write is a new version even within one timestamp tick.
            try? (Self.photo + Data(repeating: 0, count: read)).write(to: url)
            return nil
        }
        let (file, store) = try makeStore(reading: Self.photo, through: loader, in: folder)
        let request = ImageRequest(url: file, targetWidth: 150)
        let result = await outcome(of: request, in: store)
        guard case .failure(.fileUnavailable(let path, let reason)) = result else {
            Issue.record("expected the file to be unavailable, got \(result)")
            return
        }
        #expect(path == file.path)
        #expect(reason == "changed while it was read, \(ImageStore.localReadAttempts) times in a row")
        #expect(loader.readCount == 2 * ImageStore.localReadAttempts)
        #expect(store.cachedImage(for: request) == nil)
    }

    /// Something that touches each file it reads (a loader keeping its own recency by date) changes
    /// the dates, not the bytes: the second read gives the same bytes, and it stands. The file has
    /// changed dates again once they decode, so the load reads it again (twice, for the same reason),
    /// finds the same bytes and keeps the image it decoded: one decode.
    @Test func aFileTouchedAfterEachReadIsDecodedOnce() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = RewritingLoader { _, url in
            _ = utimensat(AT_FDCWD, url.path, nil, 0)  // now, to the nanosecond
            return nil
        }
        let (file, store) = try makeStore(reading: Self.photo, through: loader, in: folder)
        let result = await outcome(of: ImageRequest(url: file, targetWidth: 150), in: store)
        #expect(try result.get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(loader.readCount == 4)
        #expect(store.statistics.decodes == 1)
    }

    /// The bytes came whole from the file that was there; a later load finds it gone.
    @Test func aFileDeletedRightAfterItsReadIsDelivered() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = RewritingLoader { _, url in
            try? FileManager.default.removeItem(at: url)
            return nil
        }
        let (file, store) = try makeStore(reading: Self.photo, through: loader, in: folder)
        let request = ImageRequest(url: file, targetWidth: 150)
        #expect(try await outcome(of: request, in: store).get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(loader.readCount == 1)
        guard case .failure(.fileUnavailable) = await outcome(of: request, in: store) else {
            Issue.record("a load of the deleted file should fail")
            return
        }
    }

    /// Missing when the load looks, written just before the read and deleted right after it (a program
    /// that writes a file and moves it on): the bytes were read from a file that was there, so the load may
    /// deliver them, but memory keeps none of them. Kept, they matched the "no file" every later load
    /// found, and a file long gone was served from memory.
    @Test func bytesOfAFileMissingBeforeAndAfterItsReadAreNotServedOnceItIsGone() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = RewritingLoader.writingOnlyAroundTheFirstRead(Self.photo)
        let (file, store) = try makeStore(reading: nil, through: loader, in: folder)
        let request = ImageRequest(url: file, targetWidth: 150)
        #expect(try await outcome(of: request, in: store).get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(store.cachedImage(for: request) == nil)
        #expect(store.cachedPixelSize(for: file) == nil)
        #expect(store.cachedOriginalBytes(for: file) == nil)
        guard case .failure(.fileUnavailable) = await outcome(of: request, in: store) else {
            Issue.record("a load of the deleted file should fail")
            return
        }
        #expect(loader.readCount == 2)
    }

    /// Missing when a load looks, written just before it reads: the load reads it again at the version
    /// found after the read and decodes it (held); the file is deleted, and a second load, which finds it
    /// missing, fails on its own, without waiting for that run. Then the run brings the photo of a file that
    /// is gone: the first load loads again and fails too, and memory keeps nothing. Before, the second load
    /// joined the run, and both delivered the photo, the second one though the file was missing throughout
    /// its load. Found by a randomized exploration of local files.
    @Test func aLoadThatFindsTheFileGoneDoesNotJoinARunThatReadItAndTheRunsLoadsFail() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = RewritingLoader(
            beforeRead: { read, url in if read == 1 { try? Self.photo.write(to: url) } },
            afterRead: { _, _ in nil })
        let gate = GatedDecoder(holdingOnly: Self.photo)
        defer { gate.open() }
        let file = folder.url.appendingPathComponent("photo.jpg")
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
            $0.decoder = gate
        }
        let request = ImageRequest(url: file, targetWidth: 150)
        let first = Task { await outcome(of: request, in: store) }
        try await waitUntil { gate.enteredCount == 1 }
        try FileManager.default.removeItem(at: file)
        let second = try await outcomeWhileADecodeIsHeld(of: request, in: store)
        guard case .failure(.fileUnavailable) = second else {
            Issue.record("a load of the deleted file gave \(second)")
            return
        }
        gate.open()
        guard case .failure(.fileUnavailable) = await first.value else {
            Issue.record("the first load gave \(await first.value) for a file gone by its end")
            return
        }
        #expect(store.cachedImage(for: request) == nil)
        #expect(store.cachedPixelSize(for: file) == nil)
        #expect(loader.readCount == 4)  // two by the run, one by the second load, one by the first's second look
    }

    /// Missing when a load looks, written just before the read and deleted right after it: the bytes belong
    /// to no version (memory keeps none of them), and a second load, which finds the file missing while the
    /// first decodes them (held), fails on its own. Before, it joined the first load's run, the missing
    /// file's, and was delivered the photo of a file missing throughout its load. Found by a randomized
    /// exploration of local files.
    @Test func aLoadThatFindsTheFileMissingIsNotGivenBytesReadBeforeItBegan() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = RewritingLoader.writingOnlyAroundTheFirstRead(Self.photo)
        let gate = GatedDecoder(holdingOnly: Self.photo)
        defer { gate.open() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
            $0.decoder = gate
        }
        let request = ImageRequest(url: folder.url.appendingPathComponent("photo.jpg"), targetWidth: 150)
        let first = Task { await outcome(of: request, in: store) }
        try await waitUntil { gate.enteredCount == 1 }
        let second = try await outcomeWhileADecodeIsHeld(of: request, in: store)
        guard case .failure(.fileUnavailable) = second else {
            Issue.record("a load of a file missing throughout gave \(second)")
            return
        }
        gate.open()
        #expect(try await first.value.get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(store.cachedImage(for: request) == nil)
    }

    /// A symbolic link to the photo is pointed at a portrait just before a load reads it and back just
    /// after: the stats before and after the read both find the photo's file, but the link is a new one,
    /// so the load reads again and takes the photo. Before, the portrait's bytes were taken for the photo's
    /// version and kept under it: every later load, the link at the photo throughout, was served the
    /// portrait, with its size and bytes. Found by a randomized exploration of local files.
    @Test func aLinkPointedAwayAndBackAroundTheReadIsReadAgain() async throws {
        let folder = TemporaryDirectory("rewrite")
        let (link, photoFile, portraitFile) = (
            folder.url.appendingPathComponent("photo.jpg"), folder.url.appendingPathComponent("a.jpg"),
            folder.url.appendingPathComponent("b.jpg")
        )
        try Self.photo.write(to: photoFile)
        try Self.portrait.write(to: portraitFile)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: photoFile)
        @Sendable func point(at target: URL) {
            try? FileManager.default.removeItem(at: link)
            try? FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        }
        let loader = RewritingLoader(
            beforeRead: { read, _ in if read == 1 { point(at: portraitFile) } },
            afterRead: { read, _ in
                if read == 1 { point(at: photoFile) }
                return nil
            })
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        let request = ImageRequest(url: link, targetWidth: 150)
        #expect(try await outcome(of: request, in: store).get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(loader.readCount == 2)
        #expect(try await outcome(of: request, in: store).get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(store.cachedPixelSize(for: link) == CGSize(width: 300, height: 200))
        #expect(store.cachedOriginalBytes(for: link)?.data == Self.photo)
    }

    /// Missing when the load looks, written just before the read and rewritten during it: the read is
    /// checked like any other.
    @Test func aFileThatAppearsAndChangesDuringTheReadIsReadAgain() async throws {
        let folder = TemporaryDirectory("rewrite")
        let loader = RewritingLoader(
            beforeRead: { read, url in if read == 1 { try? Self.photo.write(to: url) } },
            afterRead: { read, url in
                if read == 1 { try? Self.portrait.write(to: url) }
                return nil
            })
        let (file, store) = try makeStore(reading: nil, through: loader, in: folder)
        let request = ImageRequest(url: file, targetWidth: 150)
        #expect(try await outcome(of: request, in: store).get().pixelSize == PixelSize(width: 150, height: 225))
        #expect(loader.readCount == 2)
        #expect(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 150, height: 225))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 160, height: 240))
    }
}

/// Reads files with the real loader, calling `beforeRead` and then `afterRead` with the number of the
/// read (from 1) and the URL: either may change the file, and the error `afterRead` returns is thrown
/// instead of the bytes.
private final class RewritingLoader: DataLoading, Sendable {
    private let base = DataLoader()
    private let reads = LockedBox(0)
    private let beforeRead: @Sendable (Int, URL) -> Void
    private let afterRead: @Sendable (Int, URL) -> ImageLoadingError?

    /// A loader for a file missing but for its first read: `bytes` are written just before that read and
    /// the file is deleted right after it.
    static func writingOnlyAroundTheFirstRead(_ bytes: Data) -> RewritingLoader {
        RewritingLoader(
            beforeRead: { read, url in if read == 1 { try? bytes.write(to: url) } },
            afterRead: { read, url in
                if read == 1 { try? FileManager.default.removeItem(at: url) }
                return nil
            })
    }

    init(
        beforeRead: @escaping @Sendable (Int, URL) -> Void = { _, _ in },
        afterRead: @escaping @Sendable (Int, URL) -> ImageLoadingError?
    ) {
        self.beforeRead = beforeRead
        self.afterRead = afterRead
    }

    var readCount: Int { reads.withLock { $0 } }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        let read = reads.withLock {
            $0 += 1
            return $0
        }
        beforeRead(read, url)
        let data = try await base.loadData(for: url)
        if let error = afterRead(read, url) { throw error }
        return data
    }
}
