import Foundation
import Testing

@testable import AsyncImageCache

/// Local files whose names are bytes that are not UTF-8 (`caf\xE9.jpg`, in Latin-1), as Linux allows:
/// a `file:` URL names them with percent escapes (`caf%E9.jpg`), and they load, size and cache like
/// any other file. Foundation gives `""` for such a URL's `path`, which named no file at all.
@Suite struct ImageStoreNonUTF8FileNameTests {
    /// `caf\xE9.jpg`: "café.jpg" in Latin-1.
    static let latin1Name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)

    private static func photo() throws -> Data {
        try Fixtures.data("jpeg", "testorig.jpg")
    }

    @Test func aFileDataLoaderReadsAFileWithALatin1Name() async throws {
        let photo = try Self.photo()
        let files = RawNamedFiles()
        let url = try files.file(named: Self.latin1Name, contents: photo)
        #expect(url.absoluteString.hasSuffix("/caf%E9.jpg"))
        #expect(try await FileDataLoader().loadData(for: url) == photo)
    }

    @Test func aFileWithALatin1NameLoadsSizesAndCachesLikeAnyOther() async throws {
        let files = RawNamedFiles()
        let url = try files.file(named: Self.latin1Name, contents: try Self.photo())
        let (spy, loader, decoder) = (FileInspectorSpy(), RecordingLoader(), CountingDecoder())
        let store = try ImageStore.makeForTesting(root: files.folder.appendingPathComponent("cache")) {
            $0.fileInspector = spy
            $0.dataLoader = loader
            $0.decoder = decoder
        }
        let request = ImageRequest(url: url, targetWidth: 100)
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 227, height: 149))
        #expect(store.cachedImage(for: request) == nil)

        let image = try await store.image(for: request)
        #expect(image.pixelSize == PixelSize(width: 100, height: 66))
        let (stats, reads) = (spy.count, loader.startedCount)
        #expect(store.cachedImage(for: request)?.pixelSize == image.pixelSize)
        #expect(spy.count == stats && loader.startedCount == reads)

        // The next load finds the file's version unchanged: one stat, and neither a read nor a decode.
        _ = try await store.image(for: request)
        #expect(spy.count == stats + 1)
        #expect(loader.startedCount == 1)
        #expect(decoder.count == 1)
    }

    @Test func aLargeFileWithALatin1NameThatIsNotAnImageFailsWithoutBeingRead() async throws {
        let files = RawNamedFiles()
        let url = try files.file(named: Self.latin1Name, contents: Data("not an image".utf8))
        try files.setLength(ofFileNamed: Self.latin1Name, to: ImageStore.largeFileBytes + 1024)
        let loader = RecordingLoader()
        let store = try ImageStore.makeForTesting(root: files.folder.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        let error = await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        }
        guard case .decodingFailed(let failure) = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        #expect(failure.reason == .unrecognizedFormat)
        #expect(loader.startedCount == 0)
    }

    @Test func aMissingFileWithALatin1NameFailsNamingItsPathPercentEncoded() async throws {
        let files = RawNamedFiles()
        let url = try files.file(named: Self.latin1Name, contents: nil)
        let expected = ImageLoadingError.fileUnavailable(
            path: files.folder.path + "/caf%E9.jpg", reason: "No such file or directory")
        await #expect(throws: expected) { try await FileDataLoader().loadData(for: url) }
        let store = try ImageStore.makeForTesting(root: files.folder.appendingPathComponent("cache"))
        await #expect(throws: expected) { try await store.image(for: ImageRequest(url: url, targetWidth: 100)) }
    }

    /// `%00` decodes to a NUL, which ends a C string: `a%00b.jpg` would open `a`. Foundation's `path` keeps
    /// it as the three characters `%00`, which opened a file literally named `a%00b.jpg`: neither is the
    /// file the URL names, which no file system can hold.
    @Test func aPathWithAnEscapedNULIsRefused() async throws {
        let photo = try Self.photo()
        let files = RawNamedFiles()
        _ = try files.file(named: Array("a%00b.jpg".utf8), contents: photo)
        _ = try files.file(named: Array("a".utf8), contents: photo)
        let url = try #require(
            URL(string: URL(fileURLWithPath: files.folder.path, isDirectory: true).absoluteString + "a%00b.jpg"))
        let error = await #expect(throws: ImageLoadingError.self) { try await FileDataLoader().loadData(for: url) }
        guard case .fileUnavailable(let path, let reason) = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        #expect(path == files.folder.path + "/a%00b.jpg")
        #expect(reason.contains("NUL"))
        let store = try ImageStore.makeForTesting(root: files.folder.appendingPathComponent("cache"))
        await #expect(throws: ImageLoadingError.fileUnavailable(path: path, reason: reason)) {
            try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        }
        #expect(store.cachedPixelSize(for: url) == nil)
    }
}
