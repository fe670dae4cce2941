#if canImport(CWebP)
import CWebP
import Foundation

extension ImageDecoders {
    /// Decodes WebP with libwebp into 8-bit straight RGBA, at the smallest size that covers the size asked for.
    ///
    /// Lossy (VP8), lossless (VP8L) and extended files decode, with or without alpha. libwebp scales while it
    /// decodes, so a 4000x3000 picture shown 300 pixels wide comes out 300x225 and the full bitmap never exists:
    ///
    /// ```swift
    /// let context = ImageDecodingContext(header: header, minimumSize: PixelSize(width: 300, height: 200))
    /// let bitmap = try ImageDecoders.WebP().decode(data, context: context)   // 300x225
    /// ```
    ///
    /// An animation gives its first frame on the canvas: the frame is found with libwebp's demuxer, decoded on
    /// its own and placed at its offset on a transparent canvas of the file's size (scaled like the rest).
    /// Frame 1 has nothing under it to blend with, and no later frame is read.
    ///
    /// The pixel budget is checked on the output size before decoding, and on the full size too for a
    /// lossless bitstream or one with alpha, which libwebp decodes through buffers of the whole image
    /// whatever the scale. Data that ends early throws
    /// ``ImageDecodingError/Reason/truncated``, features libwebp refuses throw `.unsupportedFeature`, anything
    /// else `.corrupt` with libwebp's status, such as `VP8_STATUS_BITSTREAM_ERROR`.
    public struct WebP: ImageDecoding {
        /// Creates a WebP decoder.
        public init() {}

        /// Decodes `data` at the smallest size that covers `context.minimumSize`, keeping the aspect ratio.
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            guard !data.isEmpty else { throw ImageDecodingError(format: .webp, reason: .truncated) }
            return try data.withUnsafeBytes { bytes in
                Result { () throws(ImageDecodingError) in try Self.decode(bytes, context: context) }
            }.get()
        }

        private static func decode(_ bytes: UnsafeRawBufferPointer, context: ImageDecodingContext)
            throws(ImageDecodingError) -> Bitmap
        {
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw ImageDecodingError(format: .webp, reason: .truncated)
            }
            var features = WebPBitstreamFeatures()
            try check(WebPGetFeatures(base, bytes.count, &features))
            let canvas = PixelSize(width: Int(features.width), height: Int(features.height))
            let output = canvas.scaledDown(toCover: context.minimumSize)
            try context.checkBudget(output.pixelCount, format: .webp)
            if features.has_animation != 0 {
                // Frame 1's own bitstream is checked there; the canvas is only ever made at the output size.
                return try WebPFirstFrame(bytes).decode(canvas: canvas, output: output, context: context)
            }
            try checkFullSizeBuffers(features, size: canvas, context)
            let byteCount = output.pixelCount * 4
            var status = VP8_STATUS_OK
            let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initializedCount in
                status = decode(
                    bytes, size: canvas, scaledTo: output, into: buffer.baseAddress!,
                    bytesPerRow: output.width * 4, byteCount: byteCount)
                // On failure the pixels are discarded; UInt8 needs no deinitialization either way.
                initializedCount = status == VP8_STATUS_OK ? byteCount : 0
            }
            try check(status)
            return Bitmap(width: output.width, height: output.height, pixels: pixels)
        }

        /// Decodes a whole file or one frame's bitstream, `size` pixels, scaled to `scaled`, into memory the caller
        /// owns: rows `bytesPerRow` apart, `byteCount` bytes from `target` on.
        static func decode(
            _ bitstream: UnsafeRawBufferPointer, size: PixelSize, scaledTo scaled: PixelSize,
            into target: UnsafeMutablePointer<UInt8>, bytesPerRow: Int, byteCount: Int
        ) -> VP8StatusCode {
            var config = WebPDecoderConfig()
            guard WebPInitDecoderConfig(&config) != 0 else { return VP8_STATUS_INVALID_PARAM }
            if scaled != size {
                config.options.use_scaling = 1
                config.options.scaled_width = Int32(scaled.width)
                config.options.scaled_height = Int32(scaled.height)
            }
            config.output.colorspace = MODE_RGBA
            config.output.is_external_memory = 1
            config.output.u.RGBA.rgba = target
            config.output.u.RGBA.stride = Int32(bytesPerRow)
            config.output.u.RGBA.size = byteCount
            let status = WebPDecode(
                bitstream.baseAddress?.assumingMemoryBound(to: UInt8.self), bitstream.count, &config)
            // Frees nothing of ours (the memory is external), only what libwebp may have attached.
            WebPFreeDecBuffer(&config.output)
            return status
        }

        /// Throws when the bitstream's full `size` exceeds `context`'s budget and libwebp decodes it through
        /// a buffer of the whole image whatever the output scale: a lossless bitstream (4 bytes a pixel; its
        /// transforms and back-references reach across the image), and a lossy one with alpha, whose ALPH
        /// chunk becomes a plane of the whole image and, when the alpha is coded losslessly (the usual
        /// way), goes through a lossless decoder's buffer of it too: a 4096x4096 file asked for at 256 px
        /// raised the peak resident set by about 81 MiB. Lossy colour decodes a few macroblock rows at a time.
        static func checkFullSizeBuffers(
            _ features: WebPBitstreamFeatures, size: PixelSize, _ context: ImageDecodingContext
        ) throws(ImageDecodingError) {
            if features.format == 2 || features.has_alpha != 0 {
                try context.checkBudget(size.pixelCount, format: .webp)
            }
        }

        /// Throws the error for a libwebp status other than `VP8_STATUS_OK`.
        static func check(_ status: VP8StatusCode) throws(ImageDecodingError) {
            switch status {
            case VP8_STATUS_OK: return
            case VP8_STATUS_NOT_ENOUGH_DATA: throw ImageDecodingError(format: .webp, reason: .truncated)
            case VP8_STATUS_UNSUPPORTED_FEATURE:
                throw ImageDecodingError(
                    format: .webp, reason: .unsupportedFeature("VP8_STATUS_UNSUPPORTED_FEATURE"))
            default: throw ImageDecodingError(format: .webp, reason: .corrupt(name(of: status)))
            }
        }

        /// The name of `status` as libwebp's header spells it.
        static func name(of status: VP8StatusCode) -> String {
            switch status {
            case VP8_STATUS_OK: "VP8_STATUS_OK"
            case VP8_STATUS_OUT_OF_MEMORY: "VP8_STATUS_OUT_OF_MEMORY"
            case VP8_STATUS_INVALID_PARAM: "VP8_STATUS_INVALID_PARAM"
            case VP8_STATUS_BITSTREAM_ERROR: "VP8_STATUS_BITSTREAM_ERROR"
            case VP8_STATUS_UNSUPPORTED_FEATURE: "VP8_STATUS_UNSUPPORTED_FEATURE"
            case VP8_STATUS_SUSPENDED: "VP8_STATUS_SUSPENDED"
            case VP8_STATUS_USER_ABORT: "VP8_STATUS_USER_ABORT"
            case VP8_STATUS_NOT_ENOUGH_DATA: "VP8_STATUS_NOT_ENOUGH_DATA"
            default: "VP8 status \(status.rawValue)"
            }
        }
    }
}
#endif
