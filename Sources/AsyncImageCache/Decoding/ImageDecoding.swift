import Foundation

/// What a decoder is asked to produce.
public struct ImageDecodingContext: Sendable {
    /// The header of the data, already parsed by ``ImageHeader/parse(_:)``.
    public var header: ImageHeader
    /// The smallest size, in stored (not displayed) orientation, that the decoded bitmap must
    /// cover in both dimensions; `nil` asks for the full size. A decoder that can decode at a
    /// reduced scale (JPEG's DCT scaling, WebP's scaled decode) picks the smallest scale that still
    /// covers it; the caller resizes the result to the exact size.
    public var minimumSize: PixelSize?
    /// The most pixels a decoded bitmap may have. A decoder checks it before allocating and throws
    /// ``ImageDecodingError/Reason/pixelBudgetExceeded(pixels:budget:)`` past it.
    public var pixelBudget: Int

    /// Creates a context.
    public init(header: ImageHeader, minimumSize: PixelSize? = nil, pixelBudget: Int = ImageDecodingContext.defaultPixelBudget) {
        self.header = header
        self.minimumSize = minimumSize
        self.pixelBudget = pixelBudget
    }

    /// The default pixel budget: 64 megapixels, a 256 MiB RGBA bitmap.
    public static let defaultPixelBudget = 64 * 1024 * 1024
}

/// A capability that turns encoded bytes into a ``Bitmap`` in stored orientation.
///
/// Decoders do not apply EXIF orientation: the store does that after decoding, the same way for
/// every format. A decoder must never crash or exit on malformed input; it throws
/// ``ImageDecodingError`` instead.
public protocol ImageDecoding: Sendable {
    /// Decodes `data` as asked by `context`.
    func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap
}
