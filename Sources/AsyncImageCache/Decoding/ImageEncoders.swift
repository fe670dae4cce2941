import Foundation

/// Encoders for writing bitmaps out (the command-line tool, tests and benchmarks use them).
public enum ImageEncoders {
    /// Encodes bitmaps as 8-bit RGBA PNG.
    public struct PNG: Sendable {
        /// Creates a PNG encoder.
        public init() {}
        /// The PNG bytes of `bitmap`.
        public func encode(_ bitmap: Bitmap) throws(ImageDecodingError) -> Data {
            throw ImageDecodingError(format: .png, reason: .unsupportedFormat)  // PLACEHOLDER
        }
    }

    /// Encodes bitmaps as baseline JPEG (alpha is dropped).
    public struct JPEG: Sendable {
        /// The quality from 1 to 100; 90 by default.
        public var quality: Int
        /// Creates a JPEG encoder with `quality` from 1 to 100.
        public init(quality: Int = 90) { self.quality = quality }
        /// The JPEG bytes of `bitmap`.
        public func encode(_ bitmap: Bitmap) throws(ImageDecodingError) -> Data {
            throw ImageDecodingError(format: .jpeg, reason: .unsupportedFormat)  // PLACEHOLDER
        }
    }
}
