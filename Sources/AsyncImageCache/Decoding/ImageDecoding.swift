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
    /// Whether nobody wants the bitmap any more: every load waiting for this decode was cancelled.
    /// Always `false` for a context you make; ``ImageStore`` raises it while its decode runs.
    ///
    /// A decoder that works in steps (rows, tiles, frames) may check it every so many steps, it is one
    /// atomic read, and stop early by throwing ``ImageDecodingError/Reason/cancelled``. A decoder that
    /// never looks is still correct: its bitmap is simply not wanted. Either way the store reports the
    /// load as ``ImageLoadingError/cancelled`` and never takes a decode stopped this way for damaged data.
    public var isCancelled: Bool { cancellation?.isCancelled ?? false }
    /// The store's signal behind ``isCancelled``; `nil` outside the store.
    var cancellation: DecodeCancellation?

    /// Creates a context.
    public init(
        header: ImageHeader, minimumSize: PixelSize? = nil, pixelBudget: Int = ImageDecodingContext.defaultPixelBudget
    ) {
        self.header = header
        self.minimumSize = minimumSize
        self.pixelBudget = pixelBudget
    }

    /// The default pixel budget of a context you make: 64 megapixels, a 256 MiB RGBA bitmap. A store's
    /// default, ``ImageStore/recommendedPixelBudget()``, is this or less where the process may use
    /// less than 1 GiB of memory.
    public static let defaultPixelBudget = 64 * 1024 * 1024

    /// Throws ``ImageDecodingError/Reason/pixelBudgetExceeded(pixels:budget:)``, naming `format`, when
    /// `pixels` are more than ``pixelBudget``: the check a decoder makes before it allocates.
    func checkBudget(_ pixels: Int, format: ImageFormat) throws(ImageDecodingError) {
        guard pixels > pixelBudget else { return }
        throw ImageDecodingError(format: format, reason: .pixelBudgetExceeded(pixels: pixels, budget: pixelBudget))
    }

    /// Throws ``ImageDecodingError/Reason/cancelled``, naming `format`, when the decode should stop.
    func checkCancellation(format: ImageFormat) throws(ImageDecodingError) {
        guard isCancelled else { return }
        throw ImageDecodingError(format: format, reason: .cancelled)
    }
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

extension ImageDecodingContext {
    /// The size a decoder that scales freely while decoding (ImageIO's thumbnails) should produce: the
    /// header's stored size scaled down, aspect ratio kept, to the smallest size that still covers
    /// ``minimumSize`` in both dimensions, each side rounded up. The stored size itself when `minimumSize`
    /// is `nil` or not smaller than the image in both dimensions.
    ///
    /// A 1800x1200 image asked to cover 320x200 gives 320x214: the width binds, the height follows.
    var coveringSize: PixelSize { header.storedSize.scaledDown(toCover: minimumSize) }
}

extension PixelSize {
    /// This size scaled down, aspect ratio kept, to the smallest size that still covers `minimumSize` in both
    /// dimensions, each side rounded up; this size itself when `minimumSize` is `nil` or not smaller in both
    /// dimensions. (The WebP decoder applies it to the size in the bitstream rather than the header's.)
    func scaledDown(toCover minimumSize: PixelSize?) -> PixelSize {
        guard let minimumSize, minimumSize.width < width, minimumSize.height < height else { return self }
        let (coverWidth, coverHeight) = (max(1, minimumSize.width), max(1, minimumSize.height))
        // Integer arithmetic, so a side that binds comes out exact rather than one over after rounding up.
        // Sides are at most 2^24 (WebP's VP8X), so the products cannot overflow.
        if coverWidth * height >= coverHeight * width {
            return PixelSize(width: coverWidth, height: (height * coverWidth + width - 1) / width)
        }
        return PixelSize(width: (width * coverHeight + height - 1) / height, height: coverHeight)
    }
}
