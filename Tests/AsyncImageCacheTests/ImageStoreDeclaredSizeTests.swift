import Foundation
import Testing

@testable import AsyncImageCache

/// What a store delivers for a file that codes more pixels than its header declares: never more than
/// the natural size it reports for the file, whatever width is asked for.
@Suite struct ImageStoreDeclaredSizeTests {
    let root = TemporaryDirectory("declared-size")

    @Test(arguments: ["declares-64-codes-4096.heic", "declares-64-codes-4096.avif"])
    func aFileThatCodesMoreThanItDeclaresComesOutAtItsDeclaredSize(name: String) async throws {
        let store = try ImageStore.makeForTesting(root: root.url)
        let url = Fixtures.url("heif", name)
        for width: CGFloat in [32, 320, 5000] {
            let image = try await store.image(for: ImageRequest(url: url, targetWidth: width))
            // Before: 4096x4096 for every width over 64.
            #expect(image.pixelSize.width <= min(Int(width), 64), "\(width)")
            #expect(image.pixelSize.width == image.pixelSize.height)
        }
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 64, height: 64))
    }
}
