import Foundation
import Testing

@testable import AsyncImageCache

/// A local file read while another program rewrites it in place: the load reads it again, once, at
/// its new version, instead of failing on the bytes it caught halfway.
@Suite struct ImageStoreLocalFileRewriteTests {
    /// Writes `caught` where a store's load will read it, holds that load right after its read, writes
    /// `finished` over it, lets the load go and returns what it gave, with the store and its loader.
    private func loadCaughtMidRewrite(
        caught: Data, finished: Data, in folder: TemporaryDirectory
    ) async throws -> (result: Result<PlatformImage, ImageLoadingError>, store: ImageStore, loader: ParkingLoader) {
        let file = folder.url.appendingPathComponent("photo.jpg")
        try caught.write(to: file)
        let loader = ParkingLoader()
        defer { loader.gate.open() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        loader.gate.arm()
        let load = Task { () async -> Result<PlatformImage, ImageLoadingError> in
            do throws(ImageLoadingError) {
                return .success(try await store.image(for: ImageRequest(url: file, targetWidth: 150)))
            } catch {
                return .failure(error)
            }
        }
        try await waitUntil { loader.gate.parkedCount == 1 }
        try finished.write(to: file)
        loader.gate.open()
        return (await load.value, store, loader)
    }

    @Test func aFileCaughtHalfWrittenIsReadAgainAtItsNewVersion() async throws {
        let folder = TemporaryDirectory("rewrite")
        let photo = try SampleImages.jpeg(width: 300, height: 200)
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
        let photo = try SampleImages.jpeg(width: 300, height: 200)
        let (result, _, loader) = try await loadCaughtMidRewrite(caught: Data(), finished: photo, in: folder)
        #expect(try result.get().pixelSize == PixelSize(width: 150, height: 100))
        #expect(loader.readCount == 2)
    }

    @Test func aFileStillCutShortAfterItChangedFailsAfterTheSecondRead() async throws {
        let folder = TemporaryDirectory("rewrite")
        let photo = try SampleImages.jpeg(width: 300, height: 200)
        let (result, store, loader) = try await loadCaughtMidRewrite(
            caught: photo.prefix(photo.count / 3), finished: photo.prefix(photo.count / 2), in: folder)
        guard case .failure(.decodingFailed(let error)) = result else {
            Issue.record("expected a decoding failure, got \(result)")
            return
        }
        #expect(error.reason == .truncated)
        #expect(loader.readCount == 2)
        #expect(
            store.cachedImage(for: ImageRequest(url: folder.url.appendingPathComponent("photo.jpg"), targetWidth: 150))
                == nil)
    }

    @Test func aFileCutShortThatDoesNotChangeIsReadOnce() async throws {
        let folder = TemporaryDirectory("rewrite")
        let file = folder.url.appendingPathComponent("photo.jpg")
        let photo = try SampleImages.jpeg(width: 300, height: 200)
        try photo.prefix(photo.count / 2).write(to: file)
        let loader = ParkingLoader()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: file, targetWidth: 150))
        }
        #expect(loader.readCount == 1)
    }
}
