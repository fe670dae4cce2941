import Foundation

#if canImport(CJPEGSupport)
import CJPEGSupport
#endif
#if canImport(CPNG)
import CPNG
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
        public func encode(_ bitmap: Bitmap) throws(ImageDecodingError) -> Data {
            #if canImport(CPNG)
            var image = png_image()
            image.version = UInt32(PNG_IMAGE_VERSION)
            image.width = UInt32(bitmap.width)
            image.height = UInt32(bitmap.height)
            image.format = png_image.rgbaFormat
            defer { png_image_free(&image) }

            // Deflate never grows data by much; a second pass with libpng's own count covers the rest.
            var capacity = bitmap.byteCount + bitmap.byteCount / 64 + bitmap.height + 4096
            for _ in 0..<2 {
                var written = capacity
                var output = Data(count: capacity)
                let succeeded = output.withUnsafeMutableBytes { memory in
                    bitmap.pixels.withUnsafeBytes { pixels in
                        png_image_write_to_memory(&image, memory.baseAddress, &written, 0, pixels.baseAddress, 0, nil)
                    }
                }
                if succeeded != 0 {
                    output.count = written
                    return output
                }
                guard written > capacity else { break }
                capacity = written
            }
            let message = image.messageText
            throw ImageDecodingError(format: .png, reason: .corrupt(message.isEmpty ? "libpng failed" : message))
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

        /// The JPEG bytes of `bitmap`: baseline, 4:2:0, with the alpha channel ignored.
        public func encode(_ bitmap: Bitmap) throws(ImageDecodingError) -> Data {
            #if canImport(CJPEGSupport)
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
}
