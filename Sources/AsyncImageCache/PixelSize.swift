import Foundation

/// A size measured in whole pixels.
///
/// The store reports sizes as an image is displayed: for a JPEG whose EXIF orientation rotates it
/// by 90 degrees, `width` and `height` are those of the upright picture, not of the stored pixels.
public struct PixelSize: Hashable, Sendable, CustomStringConvertible {
    /// The number of pixel columns.
    public var width: Int
    /// The number of pixel rows.
    public var height: Int

    /// Creates a size from a pixel width and height.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// The number of pixels, `width * height`, saturating instead of overflowing.
    public var pixelCount: Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? Int.max : product
    }

    /// The same size with width and height exchanged.
    public var transposed: PixelSize { PixelSize(width: height, height: width) }

    /// The size as a `CGSize`, for APIs that lay out in floating point.
    public var cgSize: CGSize { CGSize(width: CGFloat(width), height: CGFloat(height)) }

    /// `WIDTHxHEIGHT`, for example `1024x768`.
    public var description: String { "\(width)x\(height)" }

    /// The height of an image of this size made `width` pixels wide, as the store makes it: the aspect kept,
    /// rounded, at least 1.
    func height(atWidth width: Int) -> Int {
        max(1, Int((Double(height) * Double(width) / Double(self.width)).rounded()))
    }
}
