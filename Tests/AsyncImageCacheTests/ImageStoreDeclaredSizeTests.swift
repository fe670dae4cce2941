import Foundation
import Testing

@testable import AsyncImageCache

/// What a store delivers for a file that codes more pixels than its header declares: never more than
/// the natural size it reports for the file, whatever width is asked for.
@Suite struct ImageStoreDeclaredSizeTests {
    let root = TemporaryDirectory("declared-size")

    /// The HEIF one of the pair the decoder tests use (the AVIF takes the same path through the store).
    @Test func aFileThatCodesMoreThanItDeclaresComesOutAtItsDeclaredSize() async throws {
        let store = try ImageStore.makeForTesting(root: root.url)
        let url = Fixtures.url("heif", "declares-64-codes-4096.heic")
        // Before: 4096x4096 for every width over 64. (One decode: the 64x64 result, the natural size,
        // serves the wider request from memory. A decode of 16 megapixels is slow under ThreadSanitizer.)
        for width: CGFloat in [320, 5000] {
            let image = try await store.image(for: ImageRequest(url: url, targetWidth: width))
            #expect(image.pixelSize == PixelSize(width: 64, height: 64), "\(width)")
        }
        #expect(store.statistics.decodes == 1)
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 64, height: 64))
    }
}
