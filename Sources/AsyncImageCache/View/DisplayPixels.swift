import Foundation

/// The arithmetic that turns a laid-out frame into the pixels to decode, shared by the view model
/// and anything else that sizes requests from layout.
enum DisplayPixels {
    /// The width in whole pixels that fills `layoutWidth` points at `scale`, capped at
    /// `maxPixelWidth`; `nil` when the frame has no width yet (zero, negative or not finite).
    ///
    /// Rounded up, so the decode never falls short of the screen's pixels; a hair of floating-point
    /// noise (`200 * 1.1 = 220.00000000000003`) is not rounded up to a whole extra pixel.
    static func width(forLayoutWidth layoutWidth: CGFloat, scale: CGFloat, maxPixelWidth: CGFloat?) -> Int? {
        guard layoutWidth.isFinite, layoutWidth > 0, scale.isFinite, scale > 0 else { return nil }
        var pixels = layoutWidth * scale
        if let maxPixelWidth, maxPixelWidth.isFinite, maxPixelWidth >= 1 { pixels = min(pixels, maxPixelWidth) }
        // Beyond any real screen; also keeps the conversion to Int from trapping.
        let rounded = min((pixels - 1e-6).rounded(.up), 1_000_000)
        return max(1, Int(rounded))
    }

    /// The corner radius in pixels for an image that fills `layoutWidth` points at `scale`, so that
    /// on screen it is `cornerRadius` points: `cornerRadius * scale`, scaled down by the same factor
    /// as the width when `maxPixelWidth` caps it.
    static func cornerRadius(
        _ cornerRadius: CGFloat, layoutWidth: CGFloat, scale: CGFloat, maxPixelWidth: CGFloat?
    ) -> CGFloat {
        guard cornerRadius > 0, layoutWidth.isFinite, layoutWidth > 0, scale.isFinite, scale > 0 else { return 0 }
        let pixels = layoutWidth * scale
        guard let maxPixelWidth, maxPixelWidth.isFinite, maxPixelWidth >= 1, maxPixelWidth < pixels else {
            return cornerRadius * scale
        }
        return cornerRadius * scale * maxPixelWidth / pixels
    }
}
