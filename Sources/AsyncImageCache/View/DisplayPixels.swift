import Foundation

/// The arithmetic that turns a laid-out frame into the pixels to decode, shared by the view model
/// and anything else that sizes requests from layout.
enum DisplayPixels {
    /// Whether `scale` (pixels per point) can turn any layout into pixels: finite and positive.
    static func isUsable(scale: CGFloat) -> Bool {
        scale.isFinite && scale > 0
    }

    /// The width in whole pixels that fills `layoutWidth` points at `scale`, capped at
    /// `maxPixelWidth` (see ``cap(_:)``); `nil` when the frame has no width yet (zero, negative or not
    /// finite).
    ///
    /// Rounded up, so the decode never falls short of the screen's pixels; a hair of floating-point
    /// noise (`200 * 1.1 = 220.00000000000003`) is not rounded up to a whole extra pixel.
    static func width(forLayoutWidth layoutWidth: CGFloat, scale: CGFloat, maxPixelWidth: CGFloat?) -> Int? {
        guard layoutWidth.isFinite, layoutWidth > 0, isUsable(scale: scale) else { return nil }
        var pixels = layoutWidth * scale
        if let cap = cap(maxPixelWidth) { pixels = min(pixels, cap) }
        // Beyond any real screen; also keeps the conversion to Int from trapping.
        let rounded = min((pixels - 1e-6).rounded(.up), 1_000_000)
        return max(1, Int(rounded))
    }

    /// The width in points an image of `imageSize`'s shape is drawn at in a frame of `layoutSize`:
    /// the frame's width, or with `.fill` the wider width that covers the frame's height too when the
    /// image is wider in aspect than the frame, or with `.fit` the narrower width that fits the frame's
    /// height when the image is taller in aspect than the frame. The frame's width when the image's
    /// shape is not known.
    ///
    /// An image that, at the frame's width, misses the frame's height by less than half a pixel at
    /// `scale` is drawn at the frame's width: layout rounds a box of the image's aspect to whole
    /// pixels, which must not ask for a pixel more or less than the box's width.
    static func drawnWidth(
        layoutSize: CGSize, contentMode: CachedImageModel.ContentMode, imageSize: CGSize?, scale: CGFloat
    ) -> CGFloat {
        guard let imageSize, layoutSize.width.isFinite, layoutSize.width > 0,
            layoutSize.height.isFinite, layoutSize.height > 0, imageSize.width.isFinite, imageSize.width > 0,
            imageSize.height.isFinite, imageSize.height > 0, scale.isFinite, scale > 0
        else { return layoutSize.width }
        // By the aspect, not a side times the frame: sides of 1e307 and 1.5e308 are a plain 1:15, but
        // 100 pt times either overflows.
        let heightAtFrameWidth = layoutSize.width * (imageSize.height / imageSize.width)
        if contentMode == .fit {
            guard (heightAtFrameWidth - layoutSize.height) * scale >= 0.5 else { return layoutSize.width }
            // At least a pixel for any aspect: an underflow to 0 would be no width at all, so no request.
            // Finite for any scale: a subnormal one makes a pixel an infinite width, so no request either.
            return min(
                max(layoutSize.height * (imageSize.width / imageSize.height), 1 / scale), .greatestFiniteMagnitude)
        }
        guard (layoutSize.height - heightAtFrameWidth) * scale >= 0.5 else { return layoutSize.width }
        // Finite for any aspect: an overflow would be no width at all, so no request.
        return min(layoutSize.height * (imageSize.width / imageSize.height), .greatestFiniteMagnitude)
    }

    /// Whether an image of `imageSize`'s shape, drawn with `.fill` over a frame of `layoutSize`, reaches
    /// past the frame by a pixel or more on a side at `scale`: the frame then cuts off the corners rounded
    /// into the image's pixels. `false` when any of them is not a positive, finite size.
    static func fillOverflows(layoutSize: CGSize, imageSize: CGSize, scale: CGFloat) -> Bool {
        let sides = [layoutSize.width, layoutSize.height, imageSize.width, imageSize.height, scale]
        guard sides.allSatisfy({ $0.isFinite && $0 > 0 }) else { return false }
        // Drawn at the larger of the two factors that cover the frame's width and its height.
        let factor = max(layoutSize.width / imageSize.width, layoutSize.height / imageSize.height)
        let overflow = max(imageSize.width * factor - layoutSize.width, imageSize.height * factor - layoutSize.height)
        // Centred, so half of it on each side.
        return overflow / 2 * scale >= 1
    }

    /// The corner radius in pixels for an image that fills `layoutWidth` points at `scale`, so that
    /// on screen it is `cornerRadius` points: `cornerRadius * scale`, scaled down by the same factor
    /// as the width when `maxPixelWidth` caps it.
    static func cornerRadius(
        _ cornerRadius: CGFloat, layoutWidth: CGFloat, scale: CGFloat, maxPixelWidth: CGFloat?
    ) -> CGFloat {
        // Infinite is none, as in ``ImageRequest``.
        guard cornerRadius > 0, cornerRadius.isFinite, layoutWidth.isFinite, layoutWidth > 0, scale.isFinite, scale > 0
        else { return 0 }
        // A finite radius stays finite (`.greatestFiniteMagnitude` at 2x is the largest, not infinity, which a
        // request takes for none); ``ImageRequest`` caps it.
        let radius = min(cornerRadius * scale, .greatestFiniteMagnitude)
        let pixels = layoutWidth * scale
        guard let cap = cap(maxPixelWidth), cap < pixels else { return radius }
        return radius * (cap / pixels)
    }

    /// The cap `maxPixelWidth` sets in whole pixels, a fraction of one dropped (floating-point noise
    /// aside), as widths are rounded up: `100.5` caps at 100 px, not 101. At least one pixel (a cap
    /// computed as 0 or less is the smallest, not none, which would decode at the frame's full width, and
    /// so is minus infinity); `nil` for none, NaN or infinity.
    static func cap(_ maxPixelWidth: CGFloat?) -> CGFloat? {
        guard let maxPixelWidth, !maxPixelWidth.isNaN, maxPixelWidth != .infinity else { return nil }
        return max(1, (maxPixelWidth + 1e-6).rounded(.down))
    }
}
