import Foundation

#if canImport(CJPEGSupport)
import CJPEGSupport
#endif
#if canImport(CPNGSupport)
import CPNGSupport
#endif

/// Encoders for writing bitmaps out (the command-line tool, tests and benchmarks use them).
///
/// On Linux they use libpng and libjpeg-turbo; on Apple platforms they throw
/// ``ImageDecodingError/Reason/unsupportedFormat`` for now.
///
/// ```swift
/// let png = try ImageEncoders.PNG().encode(bitmap)
/// let jpeg = try ImageEncoders.JPEG(quality: 80).encode(bitmap)
/// ```
public enum ImageEncoders {
    /// Encodes bitmaps as 8-bit RGBA PNG.
    public struct PNG: Sendable {
        /// Creates a PNG encoder.
        public init() {}

        /// The PNG bytes of `bitmap`: 8-bit RGBA, not interlaced, lossless.
        ///
        /// Written for speed: libpng picks a filter per row and zlib codes runs only. On photographs
        /// that is within a few percent of zlib's default level in size, at about a fifth of the time.
        /// A bitmap with a side over 1,000,000 pixels (libpng's limit) throws
        /// ``ImageDecodingError/Reason/unsupportedFeature(_:)`` with its size.
        public func encode(_ bitmap: Bitmap) throws(ImageDecodingError) -> Data {
            #if canImport(CPNGSupport)
            // libpng's PNG_USER_WIDTH_MAX and PNG_USER_HEIGHT_MAX.
            try ImageEncoders.checkSides(of: bitmap, format: .png, maximum: 1_000_000)
            var result = cpng_encoded()
            let status = bitmap.pixels.withUnsafeBytes { pixels in
                cpng_encode_rgba(
                    pixels.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(clamping: bitmap.width),
                    Int32(clamping: bitmap.height), bitmap.width * 4, &result)
            }
            guard status == 0, let bytes = result.bytes else {
                let message = withUnsafeBytes(of: result.message) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                throw ImageDecodingError(format: .png, reason: .corrupt(message.isEmpty ? "libpng failed" : message))
            }
            return Data(
                bytesNoCopy: bytes, count: result.count, deallocator: .custom { pointer, _ in cpng_free(pointer) })
            #else
            throw ImageDecodingError(format: .png, reason: .unsupportedFormat)
            #endif
        }
    }

    /// Encodes bitmaps as baseline JPEG (alpha is dropped).
    public struct JPEG: Sendable {
        /// The quality from 1 to 100; 90 by default. Values outside that range are clamped to it.
        public var quality: Int
        /// Creates a JPEG encoder with `quality` from 1 to 100.
        public init(quality: Int = 90) { self.quality = quality }

        /// The JPEG bytes of `bitmap`: baseline, 4:2:0, with the alpha channel ignored. A bitmap with a
        /// side over 65,500 pixels (JPEG's limit) throws ``ImageDecodingError/Reason/unsupportedFeature(_:)``
        /// with its size.
        public func encode(_ bitmap: Bitmap) throws(ImageDecodingError) -> Data {
            #if canImport(CJPEGSupport)
            // libjpeg's JPEG_MAX_DIMENSION.
            try ImageEncoders.checkSides(of: bitmap, format: .jpeg, maximum: 65_500)
            var encoded = cjpeg_encoded()
            let clampedQuality = Int32(min(max(quality, 1), 100))
            let status = bitmap.pixels.withUnsafeBufferPointer { pixels in
                cjpeg_encode_rgba(
                    pixels.baseAddress,
                    Int32(clamping: bitmap.width),
                    Int32(clamping: bitmap.height),
                    bitmap.bytesPerRow,
                    clampedQuality,
                    &encoded
                )
            }
            defer { cjpeg_free(encoded.bytes) }
            guard status == CJPEG_STATUS_OK, let bytes = encoded.bytes else {
                let message = withUnsafeBytes(of: &encoded.message) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                throw ImageDecodingError(format: .jpeg, reason: .corrupt(message.isEmpty ? "libjpeg failed" : message))
            }
            return Data(bytes: bytes, count: encoded.count)
            #else
            throw ImageDecodingError(format: .jpeg, reason: .unsupportedFormat)
            #endif
        }
    }

    /// Refuses a bitmap with a side over what `format` can hold, saying so: the C wrappers turn it away
    /// with no more than "invalid arguments", which read as corrupt data.
    static func checkSides(of bitmap: Bitmap, format: ImageFormat, maximum: Int) throws(ImageDecodingError) {
        guard bitmap.width > maximum || bitmap.height > maximum else { return }
        throw ImageDecodingError(
            format: format,
            reason: .unsupportedFeature("\(bitmap.pixelSize) px: \(format)'s sides are at most \(maximum) px"))
    }
}
