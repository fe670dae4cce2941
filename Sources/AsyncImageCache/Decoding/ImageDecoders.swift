import Foundation

/// The decoders that ship with the package.
public enum ImageDecoders {
    /// The default decoder: picks the codec for the header's format.
    public struct Default: ImageDecoding {
        /// Creates the default decoder.
        public init() {}

        /// Decodes `data` with the codec for `context.header.format`.
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            // PLACEHOLDER: the codecs are being written.
            throw ImageDecodingError(format: context.header.format, reason: .unsupportedFormat)
        }
    }
}
