import Foundation
import Testing

@testable import AsyncImageCache

/// A large local file is read whole only when its first bytes start an image.
@Suite struct ImageStoreLargeLocalFileTests {
    /// `head` followed by zeros up to `byteCount`, without writing the zeros (a sparse file).
    private func writeFile(_ url: URL, head: Data, byteCount: Int) throws {
        try head.write(to: url)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(byteCount))
        try handle.close()
    }

    /// A file whose first bytes start no image, or a JPEG segment and then bytes that start no marker: the
    /// latter's header walk once passed over them to the end of the first 16 KiB and took the header for one
    /// that runs past them, so the file was read whole.
    @Test(arguments: [
        (Data("not an image, whatever the name says".utf8), 3 << 30, ImageDecodingError.Reason.unrecognizedFormat),
        // SOI, an APP0 of two bytes, then zeros.
        (
            Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x41, 0x42]), ImageStore.largeFileBytes + 1024,
            .corrupt("4096 bytes that start no marker at byte 8")
        ),
    ])
    func aLargeFileThatIsNotAnImageFailsWithoutBeingRead(
        head: Data, byteCount: Int, reason: ImageDecodingError.Reason
    ) async throws {
        let folder = TemporaryDirectory("large")
        let file = folder.url.appendingPathComponent("huge.jpg")
        try writeFile(file, head: head, byteCount: byteCount)
        let loader = RecordingLoader()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        let error = await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: file, targetWidth: 100))
        }
        guard case .decodingFailed(let failure) = error else {
            Issue.record("got \(String(describing: error))"); return
        }
        #expect(failure.reason == reason)
        #expect(loader.startedCount == 0)
    }

    @Test func aLargeFileThatStartsAnImageIsRead() async throws {
        let folder = TemporaryDirectory("large")
        let names = try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
        let file = folder.url.appendingPathComponent(names[0])
        // Bytes after a JPEG's end are ignored, so the image stays valid at any length.
        try writeFile(file, head: try Data(contentsOf: file), byteCount: ImageStore.largeFileBytes + 1024)
        let loader = RecordingLoader()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.dataLoader = loader
        }
        let image = try await store.image(for: ImageRequest(url: file, targetWidth: 100))
        #expect(image.pixelSize == PixelSize(width: 100, height: 67))
        #expect(loader.startedCount == 1)
    }
}
