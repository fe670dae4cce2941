import Foundation

/// The decoders that ship with the package.
public enum ImageDecoders {
    /// The default decoder: picks the codec for the header's format.
    ///
    /// On Apple platforms every format goes to ImageIO (`ImageDecoders.ImageIO`). On Linux, JPEG
    /// goes to ``ImageDecoders/JPEG``, PNG to ``ImageDecoders/PNG``, WebP to ``ImageDecoders/WebP``,
    /// GIF to ``ImageDecoders/GIF``, and HEIF and AVIF to ``ImageDecoders/HEIF``; BMP throws
    /// ``ImageDecodingError/Reason/unsupportedFormat``.
    public struct Default: ImageDecoding {
        /// Creates the default decoder.
        public init() {}

        /// Decodes `data` with the codec for `context.header.format`.
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            #if canImport(ImageIO)
            return try ImageIO().decode(data, context: context)
            #else
            switch context.header.format {
            #if canImport(CJPEGSupport)
            case .jpeg:
                return try JPEG().decode(data, context: context)
            #endif
            #if canImport(CPNG)
            case .png:
                return try PNG().decode(data, context: context)
            #endif
            #if canImport(CWebP)
            case .webp:
                return try WebP().decode(data, context: context)
            #endif
            #if canImport(CGIF)
            case .gif:
                return try GIF().decode(data, context: context)
            #endif
            #if canImport(CHEIF)
            case .heif, .avif:
                return try HEIF().decode(data, context: context)
            #endif
            default:
                throw ImageDecodingError(format: context.header.format, reason: .unsupportedFormat)
            }
            #endif
        }
    }
}
