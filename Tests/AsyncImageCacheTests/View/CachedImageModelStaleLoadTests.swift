import Foundation
import Testing

@testable import AsyncImageCache

/// A load for a frame the model no longer has is dropped once the image for the frame it has now is
/// drawn, whether that image was already shown or came from memory.
@MainActor @Suite(.timeLimit(.minutes(3))) struct CachedImageModelStaleLoadTests {
    /// Rounded corners: a frame grows, then shrinks to one whose image memory has. Before, the load for
    /// the grown frame went on: it decoded 1200 px for nothing and, when it landed, drew that image, whose
    /// 20 px corners are 1.7 pt on the 100 pt frame, until the image from memory was taken again.
    @Test func shrinkingToAFrameInMemoryDropsTheLoadForTheGrownFrame() async throws {
        let photo = try CachedImageModelLoadingTests.LocalPhoto()
        let model = CachedImageModel(url: photo.url, cornerRadius: 10, displayScale: 2, store: photo.store)
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        await model.load()
        model.layoutChanged(to: CGSize(width: 300, height: 200))
        await model.load()
        #expect(photo.decoder.count == 2)
        var drawnWidths: [Int] = []
        model.onChange = { drawnWidths.append(model.image?.pixelSize.width ?? 0) }
        // Grown, then back to 100 pt in the next layout, before the grown frame's load lands.
        model.layoutChanged(to: CGSize(width: 600, height: 400))
        #expect(model.isLoading)
        let grown = try #require(model.loading?.task)
        model.layoutChanged(to: CGSize(width: 100, height: 67))
        #expect(model.image?.pixelSize.width == 200)
        #expect(!model.isLoading)
        // Waits for the grown frame's load to end, its completion run, without another layout or `load()`: a
        // load left running has landed by then (the model no longer waiting for it, polling `isLoading` waited
        // for nothing, and the checks below ran before any decode it went on to).
        await grown.ended()
        #expect(photo.decoder.count == 2)
        #expect(!drawnWidths.contains(1200), "drawn widths: \(drawnWidths)")
        #expect(model.image?.pixelSize.width == 200)
    }
}
