import Foundation
import Testing

@testable import AsyncImageCache

/// What a store delivers for a file that codes another size than its header declares: the natural size
/// it reports for the file, never more, whatever width is asked for.
@Suite struct ImageStoreDeclaredSizeTests {
    let root = TemporaryDirectory("declared-size")

    /// The HEIF one of the pair the decoder tests use (the AVIF takes the same path through the store).
    @Test func aFileThatCodesMoreThanItDeclaresComesOutAtItsDeclaredSize() async throws {
        let store = try ImageStore.makeForTesting(root: root.url)
        let url = Fixtures.url("heif", "declares-64-codes-4096.heic")
        #if os(Linux)
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            let refusal = HEIFDecoderTests.codedFarLargerThanDeclared(.heif)
            await #expect(throws: ImageLoadingError.decodingFailed(refusal)) {
                try await store.image(for: ImageRequest(url: url, targetWidth: 320))
            }
            return
        }
        #endif
        // Before: 4096x4096 for every width over 64. (One decode: the 64x64 result, the natural size,
        // serves the wider request from memory. A decode of 16 megapixels is slow under ThreadSanitizer.)
        for width: CGFloat in [320, 5000] {
            let image = try await store.image(for: ImageRequest(url: url, targetWidth: width))
            #expect(image.pixelSize == PixelSize(width: 64, height: 64), "\(width)")
        }
        #expect(store.statistics.decodes == 1)
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 64, height: 64))
    }

    #if os(Linux)
    /// photo.heic (coded 96x64) with its `ispe` declaring a larger size, as libavif (Chrome's and Firefox's
    /// AVIF decoder) scales the decoded picture to the size `ispe` declares.
    @Test(arguments: [PixelSize(width: 192, height: 128), PixelSize(width: 96, height: 65)])
    func aFileThatCodesLessThanItDeclaresComesOutAtItsDeclaredSize(declared: PixelSize) async throws {
        let ispe = Array("ispe".utf8) + [0, 0, 0, 0]
        let data = try HEIFDecoderTests.fixture(
            "photo.heic", replacing: ispe + [0, 0, 0, 96, 0, 0, 0, 64],
            with: ispe + [0, 0, 0, UInt8(declared.width), 0, 0, 0, UInt8(declared.height)])
        #expect(try ImageHeader.parse(data).storedSize == declared)
        let url = root.url.appendingPathComponent("declares-more.heic")
        try data.write(to: url)
        let store = try ImageStore.makeForTesting(root: root.url.appendingPathComponent("cache"))
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            await #expect(throws: ImageLoadingError.decodingFailed(HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif)))
            {
                try await store.image(for: ImageRequest(url: url))
            }
            return
        }
        // Before: 96x64, the coded size, where the store reports the declared one (and a width under it resizes).
        for width: CGFloat? in [nil, 5000] {
            let image = try await store.image(for: ImageRequest(url: url, targetWidth: width))
            #expect(image.pixelSize == declared, "\(String(describing: width))")
        }
        #expect(store.cachedPixelSize(for: url) == CGSize(width: declared.width, height: declared.height))
    }
    #endif
}
