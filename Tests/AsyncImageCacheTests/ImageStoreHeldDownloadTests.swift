import Foundation
import Testing

@testable import AsyncImageCache

/// Downloads whose load was cancelled before they decoded are held for the next load, whatever the count
/// limit of the memory tiers.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreHeldDownloadTests {
    @Test func aCancelledDownloadIsHeldForTheNextLoadWithAMemoryCountLimitOfZero() async throws {
        // A store that keeps no entries in its memory tiers (`memoryCountLimit = 0`, a disk-only cache): a row
        // scrolls away while its download waits for the decode slot, and comes back. Its bytes are held for
        // the next load, as `ImageLoadTask.cancel()` says, and it decodes them without asking the server
        // again. Before, the held downloads' count limit was the tiers' (0): the bytes were dropped, never
        // decoded so never on disk either, and the image was downloaded a second time.
        let folder = TemporaryDirectory("images")
        let names = try SampleImages.writeJPEGs(
            [PixelSize(width: 200, height: 100), PixelSize(width: 80, height: 60)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        defer { server.stop() }
        let gate = GatedDecoder(holdingOnly: try Data(contentsOf: folder.url.appendingPathComponent(names[1])))
        defer { gate.open() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.memoryCountLimit = 0
            $0.decodeConcurrency = 1
            $0.decoder = gate
        }
        let filler = Task { try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(names[1]))) }
        try await waitUntil { gate.enteredCount == 1 }  // holds the one decode slot
        let path = "/images/\(names[0])"
        let request = ImageRequest(url: server.url(path), targetWidth: 100)
        let row = Task { try await store.image(for: request) }
        try await waitUntil { store.decodeSlots.waitingCount == 1 }  // downloaded, waiting for the slot
        row.cancel()
        await #expect(throws: ImageLoadingError.cancelled) { try await row.value }
        // Its run ends once it has noticed, after the load has left.
        try await waitUntil { store.decodeSlots.waitingCount == 0 && store.variantRuns.count == 1 }
        gate.open()
        _ = try await filler.value
        let image = try await store.image(for: request)
        #expect(image.pixelSize == PixelSize(width: 100, height: 50))
        let downloads = try await server.hits(for: path)
        #expect(downloads == 1, "the cancelled download was downloaded \(downloads) times")
        // Decoded, it is on disk, as any download is: a later load reads it there.
        store.waitForDiskMaintenance()
        #expect(store.disk.data(for: request.url) != nil)
    }
}
