import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct ImageStoreRemoteHostFileTests {
    /// A file: URL on another host is never read here; a large one had its local namesake's first
    /// bytes read to tell whether it is an image, and failed as not an image.
    @Test func aLargeFileURLOnAnotherHostIsNotReadHere() async throws {
        let folder = TemporaryDirectory("review-host")
        let local = folder.url.appendingPathComponent("big.jpg")
        try Data("not an image".utf8).write(to: local)
        let handle = try FileHandle(forWritingTo: local)
        try handle.truncate(atOffset: UInt64(ImageStore.largeFileBytes + 1024))
        try handle.close()
        let remote = try #require(URL(string: "file://server\(local.path)"))
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let error = await #expect(throws: ImageLoadingError.self) {
            try await store.image(for: ImageRequest(url: remote, targetWidth: 20))
        }
        guard case .fileUnavailable = error else {
            Issue.record("file://server/... read this machine's file: \(String(describing: error))")
            return
        }
    }
}
