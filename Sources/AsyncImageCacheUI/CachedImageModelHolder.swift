#if canImport(SwiftUI)
import AsyncImageCache
import Combine
import SwiftUI

/// Keeps one ``CachedImageModel`` per ``CachedImage`` across body evaluations, makes a new one when
/// the inputs change, and tells SwiftUI when the model changes.
@MainActor
final class CachedImageModelHolder: ObservableObject {
    /// Everything a model is made from: a change means a new model.
    struct Key: Equatable {
        var url: URL?
        var intrinsicSize: CGSize?
        var cornerRadius: CGFloat
        var contentMode: CachedImageModel.ContentMode
        var maxPixelWidth: CGFloat?
        var displayScale: CGFloat
        var store: ObjectIdentifier

        /// Equal when every input is, taking a NaN as equal to a NaN: the model takes NaN sizes, caps and
        /// radii (as unknown, none, or square), and with `==` on them every body evaluation would make a new
        /// model and start its load again, whose image would evaluate the body again.
        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.url == rhs.url && same(lhs.intrinsicSize?.width, rhs.intrinsicSize?.width)
                && same(lhs.intrinsicSize?.height, rhs.intrinsicSize?.height)
                && same(lhs.cornerRadius, rhs.cornerRadius) && lhs.contentMode == rhs.contentMode
                && same(lhs.maxPixelWidth, rhs.maxPixelWidth) && same(lhs.displayScale, rhs.displayScale)
                && lhs.store == rhs.store
        }

        private static func same(_ lhs: CGFloat?, _ rhs: CGFloat?) -> Bool {
            switch (lhs, rhs) {
            case (nil, nil): return true
            case let (lhs?, rhs?): return lhs == rhs || (lhs.isNaN && rhs.isNaN)
            default: return false
            }
        }
    }

    private var key: Key?
    private var model: CachedImageModel?

    /// The model for `key`: the current one, or a new one made by `make` from the one it replaces,
    /// if any: its last laid-out size (geometry does not change just because the URL did, so no new
    /// size would come), and its image, drawn until the new model's lands when the URL is the same
    /// (a new display scale).
    func model(for key: Key, make: (CachedImageModel?) -> CachedImageModel) -> CachedImageModel {
        if let model, self.key == key { return model }
        let previous = model
        // Made first: the new model takes over a download the previous one has in flight, which the
        // previous one's disappearing would otherwise cancel.
        let model = make(previous)
        previous?.disappear()
        // Not @Published: replacing the model while SwiftUI evaluates the body must not publish.
        model.onChange = { [weak self] in self?.objectWillChange.send() }
        self.key = key
        self.model = model
        return model
    }
}
#endif
