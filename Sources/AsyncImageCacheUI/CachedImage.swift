#if canImport(SwiftUI)
import AsyncImageCache
import SwiftUI

/// A SwiftUI view that shows an image through an ``ImageStore``: it reserves the image's box
/// before the pixels arrive, decodes at the size it is laid out at, and loads off the main thread.
///
/// Named for the cache, so it is not confused with SwiftUI's `AsyncImage`. All of its logic is in
/// ``CachedImageModel``, which the Linux tests cover; this view only binds it to SwiftUI.
///
/// ```swift
/// CachedImage(url: photo.url, intrinsicSize: CGSize(width: 1024, height: 768), cornerRadius: 10)
///     .frame(maxWidth: 320)
/// ```
///
/// - The box: with an intrinsic size, or a size the store knows (even after a relaunch), the view
///   takes that aspect ratio at once and keeps it when the image lands. Otherwise it fills the
///   frame the caller gives it until the image arrives. It keeps that shape inside a frame of another:
///   in a 100x100 frame a 2:1 image takes a 100x50 box in the middle, whatever the content mode. To
///   fill a frame of another shape (a square grid cell), pass that shape as `intrinsicSize`: with
///   `.fill` the image then covers the box and is clipped to it, decoded wide enough to.
/// - The pixels: the width the image is drawn at (the laid-out width, or with `.fill` the wider
///   width that covers the frame for an image wider in aspect, with `.fit` the narrower width that
///   fits it for an image taller in aspect) times the screen's scale, capped at `maxPixelWidth`. A
///   frame that grows gets a larger decode; the current image stays until it lands.
/// - The placeholder is clear; put a background behind the view to show one.
public struct CachedImage: View {
    private let url: URL?
    private let intrinsicSize: CGSize?
    private let cornerRadius: CGFloat
    private let contentMode: ContentMode
    private let maxPixelWidth: CGFloat?
    private let store: ImageStore

    @Environment(\.displayScale) private var displayScale
    @StateObject private var holder = CachedImageModelHolder()

    /// Creates a view of the image at `url`.
    ///
    /// - Parameters:
    ///   - url: The image's location; `nil` shows the placeholder.
    ///   - intrinsicSize: The image's size if known (for example, sent by a server); `nil` (the
    ///     default) asks the store, which knows the size of any image it has cached.
    ///   - cornerRadius: The corner radius in points, rounded into the decoded pixels; `0` by default.
    ///   - contentMode: How the image fills the view's frame; `.fill` by default.
    ///   - maxPixelWidth: A cap on the decoded width in pixels, at least 1 (a smaller one is 1); `nil`
    ///     (the default) means none.
    ///   - store: The store to load from; ``ImageStore/shared`` by default.
    public init(
        url: URL?, intrinsicSize: CGSize? = nil, cornerRadius: CGFloat = 0, contentMode: ContentMode = .fill,
        maxPixelWidth: CGFloat? = nil, store: ImageStore = .shared
    ) {
        self.url = url
        self.intrinsicSize = intrinsicSize
        self.cornerRadius = cornerRadius
        self.contentMode = contentMode
        self.maxPixelWidth = maxPixelWidth
        self.store = store
    }

    /// The image, or a clear placeholder, in the reserved box.
    public var body: some View {
        let model = holder.model(for: modelKey) { previous in
            CachedImageModel(
                url: url, intrinsicSize: intrinsicSize, cornerRadius: cornerRadius, contentMode: modelContentMode,
                maxPixelWidth: maxPixelWidth, displayScale: displayScale, layoutSize: previous?.layoutSize,
                replacing: previous, store: store)
        }
        return reservingBox(of: model) {
            // The clear base takes the frame; the image is an overlay, so its own size never
            // changes the layout.
            Color.clear
                .overlay {
                    if let image = model.image {
                        Self.image(image).resizable().aspectRatio(contentMode: contentMode)
                    }
                }
                // The image's own rounded corners, or, where `.fill` draws it past the box, the box's.
                .clipShape(RoundedRectangle(cornerRadius: model.frameCornerRadius, style: .circular))
        }
        .onGeometryChange(for: CGSize.self) { proxy in
            proxy.size
        } action: { size in
            model.layoutChanged(to: size)
        }
        .task(id: ObjectIdentifier(model)) { await model.load() }
        .onDisappear { model.disappear() }
    }

    private var modelKey: CachedImageModelHolder.Key {
        .init(
            url: url, intrinsicSize: intrinsicSize, cornerRadius: cornerRadius, contentMode: modelContentMode,
            maxPixelWidth: maxPixelWidth, displayScale: displayScale, store: ObjectIdentifier(store))
    }

    /// The content mode as the model takes it: it decides how wide the image is drawn.
    private var modelContentMode: CachedImageModel.ContentMode {
        contentMode == .fill ? .fill : .fit
    }

    @ViewBuilder
    private func reservingBox<Content: View>(
        of model: CachedImageModel, @ViewBuilder content: () -> Content
    ) -> some View {
        if let size = model.reservedSize, size.width > 0, size.height > 0 {
            content().aspectRatio(size, contentMode: .fit)
        } else {
            content()
        }
    }

    private static func image(_ image: PlatformImage) -> Image {
        #if canImport(UIKit)
        return Image(uiImage: image)
        #else
        return Image(nsImage: image)
        #endif
    }
}
#endif
