#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Shrinking an axis of N samples takes Lanczos weights for about 6 N taps (each target sample reads
/// 6 x the reduction factor of them), five floats apiece with their vector copies: for an image only a
/// row or two high, many times the bitmap itself. A WebP animation's canvas may be 16777216 pixels wide.
@Suite("Resizing extremely wide images")
struct ResizeThinImageTests {
    @Test func aThinCanvasShownAsAThumbnailTakesMemoryInProportionToItsPixels() async {
        // 92 bytes: an animation on a 16777216x1 canvas (64 MiB as a bitmap, inside the default budget).
        // The decoded canvas is 64 MiB; the resize may add a fraction of that, not the 2.2 GiB it took.
        await #expect(processExitsWith: .success) {
            let data = try Fixtures.data("resize", "thin-canvas-16777216x1.webp")
            let header = try ImageHeader.parse(data)
            precondition(header.displaySize == PixelSize(width: 16_777_216, height: 1))
            let folder = TemporaryDirectory("thin")
            let store = try ImageStore.makeForTesting(root: folder.url)
            let request = ImageRequest(url: URL(string: "https://example.com/thin.webp")!, targetWidth: 320)
            let bitmap = try await PeakMemory.expectGrowth(belowMiB: 160, "render") {
                try store.render(OriginalImage(data: data, header: header, fileStamp: nil), for: request)
            }
            precondition(bitmap.pixelSize == PixelSize(width: 320, height: 1), "\(bitmap.pixelSize)")
        }
    }

    @Test func averagingColumnsFirstStaysCloseToLanczosAlone() {
        // A smooth ramp 70000 wide (past the width where columns are averaged first), shrunk 1000 times, with
        // alpha varying too: the result stays within a level or so of the exact Lanczos resize.
        let (width, height) = (70_000, 2)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 4
                pixels[offset] = UInt8(x * 255 / (width - 1))
                pixels[offset + 1] = UInt8(255 - x * 255 / (width - 1))
                pixels[offset + 2] = UInt8(y * 200)
                pixels[offset + 3] = UInt8(128 + (x * 127 / (width - 1)))
            }
        }
        let bitmap = Bitmap(width: width, height: height, pixels: pixels)
        let size = PixelSize(width: 70, height: 2)
        let resized = bitmap.resized(to: size)
        let reference = ReferenceLanczos.resize(bitmap, to: size)
        let worst = zip(resized.pixels, reference.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 2, "differs from Lanczos by up to \(worst) levels")
    }
}
#endif
