import Foundation
import Testing

@testable import AsyncImageCache

/// Local files as seed 003 describes: memory lookups never touch the disk, loads check the file's
/// version in the background, and a missing file is tried again.
@Suite struct ImageStoreLocalFileTests {
    private func makeStore(in folder: TemporaryDirectory) throws -> (
        ImageStore, FileInspectorSpy, RecordingLoader, CountingDecoder
    ) {
        let spy = FileInspectorSpy()
        let loader = RecordingLoader()
        let decoder = CountingDecoder()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.fileInspector = spy
            $0.dataLoader = loader
            $0.decoder = decoder
        }
        return (store, spy, loader, decoder)
    }

    /// `photo.jpg`, a 300x200 JPEG, written into `folder`, and a store over the folder.
    private func storeOverAPhoto(in folder: TemporaryDirectory) throws -> (
        file: URL, store: ImageStore, loader: RecordingLoader, decoder: CountingDecoder
    ) {
        let file = folder.url.appendingPathComponent("photo.jpg")
        try SampleImages.jpeg(width: 300, height: 200).write(to: file)
        let (store, _, loader, decoder) = try makeStore(in: folder)
        return (file, store, loader, decoder)
    }

    /// Writes a 300x200 photo where `request` points, starts a load of `request` whose decode of that
    /// photo a gate holds (a store that decodes two at a time), then rewrites the file as a 200x200 one:
    /// a load of the old version still in flight. The caller opens the gate.
    private func loadHeldWhileTheFileChanges(_ request: ImageRequest, in folder: TemporaryDirectory) async throws -> (
        store: ImageStore, gate: GatedDecoder, oldLoad: Task<PixelSize, any Error>
    ) {
        let old = try SampleImages.jpeg(width: 300, height: 200)
        try old.write(to: request.url)
        let gate = GatedDecoder(holdingOnly: old)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
            $0.decodeConcurrency = 2
        }
        let oldLoad = Task { try await store.image(for: request).pixelSize }
        try await waitUntil { gate.enteredCount == 1 }
        try SampleImages.jpeg(width: 200, height: 200, seed: 3).write(to: request.url)
        return (store, gate, oldLoad)
    }

    @Test func cachedImageForAFileIsAMemoryLookupThatNeverStatsOrReads() async throws {
        let folder = TemporaryDirectory("local")
        try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
        let (store, spy, loader, _) = try makeStore(in: folder)
        let request = ImageRequest(url: folder.url.appendingPathComponent("0.jpg"), targetWidth: 150)
        #expect(store.cachedImage(for: request) == nil)
        #expect(spy.count == 0 && loader.startedCount == 0)
        _ = try await store.image(for: request)
        let (stats, reads) = (spy.count, loader.startedCount)
        for _ in 0..<1000 { #expect(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 150, height: 100)) }
        #expect(spy.count == stats)
        #expect(loader.startedCount == reads)
    }

    @Test func aLoadChecksTheFileVersionAndReusesTheDecodeWhenUnchanged() async throws {
        let folder = TemporaryDirectory("local")
        try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
        let (store, spy, loader, decoder) = try makeStore(in: folder)
        let request = ImageRequest(url: folder.url.appendingPathComponent("0.jpg"), targetWidth: 150)
        _ = try await store.image(for: request)
        let stats = spy.count
        _ = try await store.image(for: request)
        #expect(spy.count == stats + 1)  // one stat, no read, no decode
        #expect(loader.startedCount == 1)
        #expect(decoder.count == 1)
    }

    @Test func aFileOverwrittenInPlaceIsDecodedAnewAtItsNextLoad() async throws {
        let folder = TemporaryDirectory("local")
        let (file, store, loader, decoder) = try storeOverAPhoto(in: folder)
        let request = ImageRequest(url: file, targetWidth: 100)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 67))
        try SampleImages.jpeg(width: 200, height: 200, seed: 3).write(to: file)
        // Until the next load, the memory lookup still answers with what it has (no stat).
        #expect(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 100, height: 67))
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 100))
        #expect(loader.startedCount == 2)
        #expect(decoder.count == 2)
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 200))
    }

    @Test func aPrefetchOfAFileOverwrittenInPlaceDecodesItAnew() async throws {
        let folder = TemporaryDirectory("local")
        let (file, store, loader, decoder) = try storeOverAPhoto(in: folder)
        let request = ImageRequest(url: file, targetWidth: 100)
        _ = try await store.image(for: request)
        try SampleImages.jpeg(width: 200, height: 200, seed: 3).write(to: file)
        store.startPrefetching([request])
        try await waitUntil { store.prefetches.withLock { $0.running.isEmpty } }
        #expect(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 100, height: 100))
        #expect(loader.startedCount == 2)
        #expect(decoder.count == 2)
    }

    @Test func aPrefetchOfAnUnchangedFileInMemoryStatsItAndDecodesNothing() async throws {
        let folder = TemporaryDirectory("local")
        try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
        let (store, spy, loader, decoder) = try makeStore(in: folder)
        let request = ImageRequest(url: folder.url.appendingPathComponent("0.jpg"), targetWidth: 150)
        _ = try await store.image(for: request)
        let stats = spy.count
        store.startPrefetching([request])
        try await waitUntil { store.prefetches.withLock { $0.running.isEmpty } }
        #expect(spy.count == stats + 1)
        #expect(loader.startedCount == 1)
        #expect(decoder.count == 1)
    }

    @Test func aMissingFileFailsAndIsTriedAgainAtTheNextLoad() async throws {
        let folder = TemporaryDirectory("local")
        let (store, _, loader, _) = try makeStore(in: folder)
        let file = folder.url.appendingPathComponent("later.jpg")
        let request = ImageRequest(url: file, targetWidth: 50)
        await #expect(throws: ImageLoadingError.self) { try await store.image(for: request) }
        try SampleImages.jpeg(width: 100, height: 100).write(to: file)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 50, height: 50))
        #expect(loader.startedCount == 2)
    }

    @Test func aFileRemovedSinceItsLastLoadLeavesNoSizeBytesOrImageAfterItsNextLoad() async throws {
        let folder = TemporaryDirectory("local")
        let (file, store, _, _) = try storeOverAPhoto(in: folder)
        let small = ImageRequest(url: file, targetWidth: 100)
        _ = try await store.image(for: small)
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 300, height: 200))
        try FileManager.default.removeItem(at: file)
        // A load at another width notices the file is gone: nothing of the old file is answered after it.
        await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: file, targetWidth: 250))
        }
        #expect(store.cachedPixelSize(for: file) == nil)
        #expect(store.cachedOriginalBytes(for: file) == nil)
        #expect(store.cachedImage(for: small)?.pixelSize == nil)
    }

    @Test func aFileReplacedByOneThatFailsToLoadHasItsNewSizeAfterThatLoad() async throws {
        let folder = TemporaryDirectory("local")
        let (file, store, _, _) = try storeOverAPhoto(in: folder)
        _ = try await store.image(for: ImageRequest(url: file, targetWidth: 100))
        // The new file's header is sound, its pixels are cut short: the load fails, the size is known.
        let replacement = try SampleImages.jpeg(width: 200, height: 400, seed: 3)
        try replacement.prefix(replacement.count / 3).write(to: file)
        await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: file, targetWidth: 100))
        }
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 400))
        #expect(store.cachedOriginalBytes(for: file) == nil)
    }

    /// JPEGs of 300x200 and 200x200, the shorter padded after its end (which decoders ignore) to the same length.
    private func twoJPEGsOfOneLength() throws -> (wide: Data, square: Data) {
        var wide = try SampleImages.jpeg(width: 300, height: 200)
        var square = try SampleImages.jpeg(width: 200, height: 200, seed: 3)
        let length = max(wide.count, square.count)
        wide.append(Data(count: length - wide.count))
        square.append(Data(count: length - square.count))
        return (wide, square)
    }

    /// Gives the file at `url` the modification time of the one at `other`, to the nanosecond, as `cp -p`,
    /// `rsync -t`, `tar` or `curl -R` do.
    private func copyModificationTime(from other: URL, to url: URL) throws {
        var status = stat()
        try #require(stat(other.path, &status) == 0)
        #if canImport(Darwin)
        let times = [status.st_atimespec, status.st_mtimespec]
        #else
        let times = [status.st_atim, status.st_mtim]
        #endif
        try #require(utimensat(AT_FDCWD, url.path, times, 0) == 0)
    }

    /// The status change time of the file at `url`, in nanoseconds.
    private func changeTime(of url: URL) throws -> Int {
        var status = stat()
        try #require(stat(url.path, &status) == 0)
        #if canImport(Darwin)
        let time = status.st_ctimespec
        #else
        let time = status.st_ctim
        #endif
        return time.tv_sec * 1_000_000_000 + time.tv_nsec
    }

    @Test func aFileReplacedByRenameWithTheSameSizeAndDateIsDecodedAnew() async throws {
        let folder = TemporaryDirectory("local")
        let file = folder.url.appendingPathComponent("photo.jpg")
        let staged = folder.url.appendingPathComponent("photo.jpg.part")
        let (wide, square) = try twoJPEGsOfOneLength()
        try wide.write(to: file)
        let (store, _, _, _) = try makeStore(in: folder)
        let request = ImageRequest(url: file, targetWidth: 100)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 67))
        try square.write(to: staged)
        try copyModificationTime(from: file, to: staged)
        try #require(rename(staged.path, file.path) == 0)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 100))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 200))
    }

    @Test func aFileOverwrittenInPlaceThatKeptItsSizeAndDateIsDecodedAnew() async throws {
        let folder = TemporaryDirectory("local")
        let file = folder.url.appendingPathComponent("photo.jpg")
        let dated = folder.url.appendingPathComponent("date")
        let (wide, square) = try twoJPEGsOfOneLength()
        try wide.write(to: file)
        try Data().write(to: dated)
        try copyModificationTime(from: file, to: dated)
        let (store, _, _, _) = try makeStore(in: folder)
        let request = ImageRequest(url: file, targetWidth: 100)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 67))
        let changedBefore = try changeTime(of: file)
        // Written into the same file, as `cp -p` does over an existing one, then given the old date; again
        // while the clock's tick has not moved on, where the file system's timestamps are coarse, so that the
        // status change time differs as it does between two writes a tick apart.
        repeat {
            let handle = try FileHandle(forWritingTo: file)
            try handle.write(contentsOf: square)
            try handle.close()
            try copyModificationTime(from: dated, to: file)
        } while try changeTime(of: file) == changedBefore
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 100))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 200))
    }

    @Test func aSymbolicLinkPointedAtAnotherFileOfTheSameSizeAndDateIsDecodedAnew() async throws {
        let folder = TemporaryDirectory("local")
        let (first, second) = (folder.url.appendingPathComponent("a.jpg"), folder.url.appendingPathComponent("b.jpg"))
        let link = folder.url.appendingPathComponent("current.jpg")
        let (wide, square) = try twoJPEGsOfOneLength()
        try wide.write(to: first)
        try square.write(to: second)
        try copyModificationTime(from: first, to: second)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: first)
        let (store, _, _, _) = try makeStore(in: folder)
        let request = ImageRequest(url: link, targetWidth: 100)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 67))
        try FileManager.default.removeItem(at: link)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: second)
        #expect(try await store.image(for: request).pixelSize == PixelSize(width: 100, height: 100))
        #expect(store.cachedPixelSize(for: link) == CGSize(width: 200, height: 200))
    }

    /// A load whose decode of the old version lands after the file was saved over (and after a load of the
    /// new version, at another width) reads and decodes the file again: it delivers, and memory keeps, the
    /// file as it is now.
    @Test func aLoadWhoseFileWasSavedOverWhileItDecodedDeliversTheNewVersion() async throws {
        let folder = TemporaryDirectory("local")
        let wide = ImageRequest(url: folder.url.appendingPathComponent("photo.jpg"), targetWidth: 150)
        let (store, gate, oldLoad) = try await loadHeldWhileTheFileChanges(wide, in: folder)
        defer { gate.open() }  // a failed expectation below must not leave a decode waiting for ever
        let file = wide.url
        let narrow = try await store.image(for: ImageRequest(url: file, targetWidth: 100))
        #expect(narrow.pixelSize == PixelSize(width: 100, height: 100))
        gate.open()
        #expect(try await oldLoad.value == PixelSize(width: 150, height: 150))
        #expect(store.cachedImage(for: wide)?.pixelSize == PixelSize(width: 150, height: 150))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 200))
        #expect(store.cachedOriginalBytes(for: file)?.pixelSize == CGSize(width: 200, height: 200))
    }

    /// The file is saved over while a load decodes it, and again while the load decodes the new version,
    /// which another load reads meanwhile: the first load, which reads the file again only once, delivers
    /// the version it decoded second (the file held it after the load began), but memory keeps nothing of
    /// it, since a load has read a newer one.
    @Test func aSecondDecodeOvertakenByALoadOfANewerVersionIsDeliveredButNotKept() async throws {
        let folder = TemporaryDirectory("local")
        let file = folder.url.appendingPathComponent("photo.jpg")
        let first = try SampleImages.jpeg(width: 300, height: 200)
        let second = try SampleImages.jpeg(width: 200, height: 200, seed: 3)
        let third = try SampleImages.jpeg(width: 160, height: 240, seed: 5)
        try first.write(to: file)
        let gate = GatedDecoder(holdingOnly: second)
        defer { gate.open() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = SavingOverDecoder(file: file, savesOver: [first: second], base: gate)
            $0.decodeConcurrency = 2
        }
        let wide = ImageRequest(url: file, targetWidth: 150)
        let load = Task { try await store.image(for: wide).pixelSize }
        try await waitUntil { gate.enteredCount == 1 }  // the second version read again and held
        try third.write(to: file)
        let narrow = try await store.image(for: ImageRequest(url: file, targetWidth: 100))
        #expect(narrow.pixelSize == PixelSize(width: 100, height: 150))
        gate.open()
        #expect(try await load.value == PixelSize(width: 150, height: 150))
        #expect(store.cachedImage(for: wide) == nil)
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 160, height: 240))
        #expect(store.cachedOriginalBytes(for: file)?.data == third)
    }

    /// A run that followed a symbolic link away and is held there: `link` (a link to `photoTarget`, as the
    /// file `url` names or a folder of its path) is pointed at `portraitTarget` while a load of `url` decodes
    /// the photo, so the load's run decodes the portrait next, held at `portraitGate`; then the link is
    /// pointed back at `photoTarget`. The caller opens `portraitGate`.
    private struct RunThatFollowedALinkAway {
        let store: ImageStore
        let request: ImageRequest
        let portraitGate: GatedDecoder
        let first: Task<PixelSize, any Error>

        static let photo = try! SampleImages.jpeg(width: 300, height: 200)
        static let portrait = try! SampleImages.jpeg(width: 160, height: 240, seed: 5)

        static func start(
            url: URL, link: URL, photoTarget: URL, portraitTarget: URL, in folder: TemporaryDirectory
        ) async throws -> RunThatFollowedALinkAway {
            func point(at target: URL) throws {
                try? FileManager.default.removeItem(at: link)
                try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
            }
            try point(at: photoTarget)
            let portraitGate = GatedDecoder(holdingOnly: portrait)
            let photoGate = GatedDecoder(holdingOnly: photo, base: portraitGate)
            var started = false
            defer {
                photoGate.open()
                if !started { portraitGate.open() }  // a failed step must not leave a decode waiting for ever
            }
            let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.decoder = photoGate
            }
            let request = ImageRequest(url: url, targetWidth: 150)
            let first = Task { try await store.image(for: request).pixelSize }
            try await waitUntil { photoGate.enteredCount == 1 }
            try point(at: portraitTarget)
            photoGate.open()
            try await waitUntil { portraitGate.enteredCount == 1 }  // the run's second decode, held
            try point(at: photoTarget)
            started = true
            return RunThatFollowedALinkAway(store: store, request: request, portraitGate: portraitGate, first: first)
        }
    }

    /// `current`, a symbolic link to the folder `a` (holding the photo as `photo.jpg`), is pointed at `b`
    /// (holding a portrait of that name) while a load of `current/photo.jpg` decodes the photo, so the load's
    /// run decodes the portrait next; while it does, the link is pointed back at `a`, and a second load, which
    /// finds the photo's very stamp (the file's, reached through a folder), joins that run. The run brings
    /// the portrait, which the path no longer leads to: both loads load again and deliver the photo. Before,
    /// both delivered the portrait, the second one though the path led to the photo throughout its load.
    /// Found by a randomized exploration of local files.
    @Test func loadsWhoseRunBringsAVersionTheFolderLinkNoLongerLeadsToLoadAgain() async throws {
        let folder = TemporaryDirectory("local")
        let (current, a, b) = (
            folder.url.appendingPathComponent("current"), folder.url.appendingPathComponent("a"),
            folder.url.appendingPathComponent("b")
        )
        for (subfolder, contents) in [(a, RunThatFollowedALinkAway.photo), (b, RunThatFollowedALinkAway.portrait)] {
            try FileManager.default.createDirectory(at: subfolder, withIntermediateDirectories: false)
            try contents.write(to: subfolder.appendingPathComponent("photo.jpg"))
        }
        let file = current.appendingPathComponent("photo.jpg")
        let run = try await RunThatFollowedALinkAway.start(
            url: file, link: current, photoTarget: a, portraitTarget: b, in: folder)
        defer { run.portraitGate.open() }
        let (store, request) = (run.store, run.request)
        let second = Task { try await store.image(for: request).pixelSize }
        try await waitUntil { store.variantRuns.waiterCount(for: request) == 2 }
        run.portraitGate.open()
        #expect(try await run.first.value == PixelSize(width: 150, height: 100))
        #expect(try await second.value == PixelSize(width: 150, height: 100))
        #expect(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 150, height: 100))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 300, height: 200))
    }

    /// A symbolic link to the photo is pointed at a portrait while a load decodes the photo, so the load's
    /// run decodes the portrait next (held); the link is pointed back at the photo, which makes a new link,
    /// so a second load does not join that run: it decodes the photo on its own, while the portrait's decode
    /// is still held. Before, it joined the run (the stamp was the photo file's alone), and was delivered the
    /// portrait, even when the link was gone by the time the run ended. Found by a randomized exploration of
    /// local files.
    @Test func aLoadThatFindsALinkPointedBackDoesNotJoinTheRunThatFollowedItAway() async throws {
        let folder = TemporaryDirectory("local")
        let (link, photoFile, portraitFile) = (
            folder.url.appendingPathComponent("photo.jpg"), folder.url.appendingPathComponent("a.jpg"),
            folder.url.appendingPathComponent("b.jpg")
        )
        try RunThatFollowedALinkAway.photo.write(to: photoFile)
        try RunThatFollowedALinkAway.portrait.write(to: portraitFile)
        let run = try await RunThatFollowedALinkAway.start(
            url: link, link: link, photoTarget: photoFile, portraitTarget: portraitFile, in: folder)
        defer { run.portraitGate.open() }
        let (store, request, portraitGate, first) = (run.store, run.request, run.portraitGate, run.first)
        let done = LockedBox(false)
        let second = Task {
            defer { done.withLock { $0 = true } }
            return try await store.image(for: request).pixelSize
        }
        try await waitUntil { done.withLock { $0 } }  // while the portrait's decode is held
        guard done.withLock({ $0 }) else { return }  // waiting for the portrait: recorded by waitUntil
        #expect(try await second.value == PixelSize(width: 150, height: 100))
        try FileManager.default.removeItem(at: link)
        portraitGate.open()
        // The link pointed at the portrait during the first load, and is gone now: the portrait stands.
        #expect(try await first.value == PixelSize(width: 150, height: 225))
    }

    /// A load made after the file changed does not wait for a load of the same request still decoding
    /// the old version: it reads the file as it is now.
    @Test func aLoadAfterTheFileChangedDoesNotJoinALoadDecodingTheOldVersion() async throws {
        let folder = TemporaryDirectory("local")
        let request = ImageRequest(url: folder.url.appendingPathComponent("photo.jpg"), targetWidth: 100)
        let (store, gate, oldLoad) = try await loadHeldWhileTheFileChanges(request, in: folder)
        defer { gate.open() }  // a failed expectation below must not leave a decode waiting for ever
        let file = request.url
        let newLoad = Task { try await store.image(for: request).pixelSize }
        // The new version is not held at the gate: its load ends while the old one's decode waits.
        try await waitUntil { store.statistics.decodes == 2 && store.cachedImage(for: request) != nil }
        #expect(gate.enteredCount == 1)
        gate.open()
        #expect(try await newLoad.value == PixelSize(width: 100, height: 100))
        // The old load finds, after its decode, that the file changed, and decodes the new version too.
        #expect(try await oldLoad.value == PixelSize(width: 100, height: 100))
        #expect(store.statistics.decodes == 3)
        #expect(store.cachedImage(for: request)?.pixelSize == PixelSize(width: 100, height: 100))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 200))
    }

    /// A load at another width made after the file changed does not share the bytes of a read of the
    /// old version still in flight.
    @Test func aLoadAfterTheFileChangedDoesNotShareAReadOfTheOldVersion() async throws {
        let folder = TemporaryDirectory("local")
        let file = folder.url.appendingPathComponent("photo.jpg")
        try SampleImages.jpeg(width: 300, height: 200).write(to: file)
        let loader = ParkingLoader()
        defer { loader.gate.open() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        loader.gate.arm()
        let oldLoad = Task { try await store.image(for: ImageRequest(url: file, targetWidth: 150)).pixelSize }
        try await waitUntil { loader.gate.parkedCount == 1 }  // the old version read, not yet handed over
        try SampleImages.jpeg(width: 200, height: 200, seed: 3).write(to: file)
        let narrow = ImageRequest(url: file, targetWidth: 100)
        let newLoad = Task { try await store.image(for: narrow).pixelSize }
        try await waitUntil { store.cachedImage(for: narrow) != nil }
        loader.gate.open()
        #expect(try await newLoad.value == PixelSize(width: 100, height: 100))
        // The old load finds, after its read, that the file changed, and reads the new version.
        #expect(try await oldLoad.value == PixelSize(width: 150, height: 150))
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 200))
    }

    @Test func loadsOfOneFileShareOneReadAndOneDecode() async throws {
        let folder = TemporaryDirectory("local")
        try SampleImages.writeJPEGs([PixelSize(width: 1200, height: 800)], into: folder.url)
        let (store, _, loader, decoder) = try makeStore(in: folder)
        let request = ImageRequest(url: folder.url.appendingPathComponent("0.jpg"), targetWidth: 240)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { _ = try await store.image(for: request) } }
            try await group.waitForAll()
        }
        #expect(loader.startedCount == 1)
        #expect(decoder.count == 1)
    }

    /// A load reads a local file and decodes it; meanwhile the file is rewritten with a picture of
    /// another size, and `cachedPixelSize(for:)` reads the new header and answers the new size. The
    /// decode of the old version, landing after that, was kept and took the size back to the old one,
    /// though the store had seen the new version; now the load decodes the new version instead.
    @Test func aDecodeOfAnOlderVersionLandingLateDoesNotTakeTheSizeBack() async throws {
        let folder = TemporaryDirectory("local-late-size")
        let file = folder.url.appendingPathComponent("photo.jpg")
        try SampleImages.jpeg(width: 100, height: 50).write(to: file)
        let decoder = GatedDecoder(open: false)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = decoder
        }
        let load = Task { try await store.image(for: ImageRequest(url: file, targetWidth: 40)) }
        try await waitUntil { decoder.enteredCount == 1 }  // the old version read, its decode held

        try SampleImages.jpeg(width: 200, height: 50, seed: 3).write(to: file)
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 50))
        decoder.open()
        #expect(try await load.value.pixelSize == PixelSize(width: 40, height: 10), "the new version is delivered")
        #expect(store.cachedPixelSize(for: file) == CGSize(width: 200, height: 50))
        #expect(
            store.cachedImage(for: ImageRequest(url: file, targetWidth: 40))?.pixelSize
                == PixelSize(width: 40, height: 10))
    }
}

/// Decodes through `base`; a decode of bytes that `savesOver` lists first writes the bytes they map to
/// over `file`, as an editor saving a photo while a load decodes it.
private struct SavingOverDecoder: ImageDecoding {
    let file: URL
    let savesOver: [Data: Data]
    let base: any ImageDecoding

    func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
        if let saved = savesOver[data] { try? saved.write(to: file) }
        return try base.decode(data, context: context)
    }
}
