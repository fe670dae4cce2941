#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

extension PhotoPipelineTests {
    /// The pixel budget as a user meets it: huge photos still load as thumbnails, absurd sizes are refused
    /// before any memory is spent on them.
    ///
    /// Serialized so that the large JPEG made by one test does not inflate the memory measured by the other.
    @Suite("Pixel budget through the store", .serialized)
    struct PixelBudgetStoreTests {
        /// Hands the work to the real decoder and records the size of every bitmap it returns.
        final class SizeRecordingDecoder: ImageDecoding {
            let sizes = LockedBox<[PixelSize]>([])

            func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
                let bitmap = try ImageDecoders.Default().decode(data, context: context)
                sizes.withLock { $0.append(bitmap.pixelSize) }
                return bitmap
            }
        }

        /// An 8000x6000 baseline JPEG (48 megapixels), encoded once for the whole run.
        static let largeJPEG = Result { try makeLargeJPEG() }

        /// Writes ``largeJPEG`` into `folder`.
        static func writeLargeJPEG(into folder: URL) throws -> URL {
            let url = folder.appendingPathComponent("large.jpg")
            try largeJPEG.get().write(to: url)
            return url
        }

        private static func makeLargeJPEG() throws -> Data {
            let (width, height) = (8000, 6000)
            // One row of colour bands, copied into every row: cheap to make even in a debug build.
            var row = [UInt8](repeating: 255, count: width * 4)
            for x in 0..<width {
                row[x * 4] = UInt8(x * 255 / (width - 1))
                row[x * 4 + 1] = x / 400 % 2 == 0 ? 40 : 220
            }
            let rowBytes = row.count
            let pixels = [UInt8](unsafeUninitializedCapacity: rowBytes * height) { buffer, initialized in
                row.withUnsafeBufferPointer { source in
                    for y in 0..<height {
                        (buffer.baseAddress! + y * rowBytes).initialize(from: source.baseAddress!, count: rowBytes)
                    }
                }
                initialized = rowBytes * height
            }
            return try ImageEncoders.JPEG(quality: 80).encode(Bitmap(width: width, height: height, pixels: pixels))
        }

        @Test func an8000By6000JPEGLoadsAsAThumbnailWithTheDefaultBudgetAndWithTwoMegapixels() async throws {
            let folder = TemporaryDirectory("budget")
            let url = try Self.writeLargeJPEG(into: folder.url)
            for budget in [ImageDecodingContext.defaultPixelBudget, 2_000_000] {
                let decoder = SizeRecordingDecoder()
                let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache-\(budget)")) {
                    $0.pixelBudget = budget
                    $0.decoder = decoder
                }
                let image = try await store.image(for: ImageRequest(url: url, targetWidth: 320))
                #expect(image.pixelSize == PixelSize(width: 320, height: 240))
                // DCT scaling at 1/8: the 48-megapixel bitmap never exists.
                #expect(decoder.sizes.withLock { $0 } == [PixelSize(width: 1000, height: 750)])
            }
        }

        @Test func theFullSizeOfThatJPEGIsRefusedWithTwoMegapixels() async throws {
            let folder = TemporaryDirectory("budget")
            let url = try Self.writeLargeJPEG(into: folder.url)
            let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
                $0.pixelBudget = 2_000_000
            }
            let expected = ImageLoadingError.decodingFailed(
                ImageDecodingError(format: .jpeg, reason: .pixelBudgetExceeded(pixels: 48_000_000, budget: 2_000_000)))
            await #expect(throws: expected) { try await store.image(for: ImageRequest(url: url)) }
        }

        @Test func a30000By30000PNGIsRefusedBeforeItsPixelsAreAllocated() async throws {
            // A valid IHDR for 900 megapixels (3.6 GB as RGBA), then a few bytes of image data.
            #expect(SyntheticHeaders.png(width: 30_000, height: 30_000).count < 200)
            await #expect(processExitsWith: .success) {
                let folder = TemporaryDirectory("budget")
                let url = folder.url.appendingPathComponent("huge.png")
                try SyntheticHeaders.png(width: 30_000, height: 30_000).write(to: url)
                let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
                let budget = ImageDecodingContext.defaultPixelBudget
                let expected = ImageLoadingError.decodingFailed(
                    ImageDecodingError(format: .png, reason: .pixelBudgetExceeded(pixels: 900_000_000, budget: budget)))
                for targetWidth: CGFloat? in [nil, 320] {
                    let request = ImageRequest(url: url, targetWidth: targetWidth)
                    let error = await PeakMemory.expectGrowth(
                        belowMiB: 100, "load at \(String(describing: targetWidth))"
                    ) {
                        do {
                            _ = try await store.image(for: request)
                            return nil as ImageLoadingError?
                        } catch {
                            return error as? ImageLoadingError
                        }
                    }
                    precondition(error == expected, "\(String(describing: error))")
                }
            }
        }
    }
}
#endif
