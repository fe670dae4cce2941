#if canImport(CWebP)
import CWebP
import Foundation

extension ImageDecoders {
    /// Decodes WebP with libwebp into 8-bit straight RGBA, at the smallest size that covers the size asked for
    /// (at full size for a lossy picture with alpha of up to 4 megapixels, an animation's frame 1 too).
    ///
    /// Lossy (VP8), lossless (VP8L) and extended files decode, with or without alpha. libwebp scales while it
    /// decodes, so a 4000x3000 picture shown 300 pixels wide comes out 300x225 and the full bitmap never exists.
    /// A lossy picture with alpha of up to ``fullSizeAlphaPixels`` is decoded at full size instead: libwebp
    /// scales its colour without weighting it by alpha, which darkens a light shape's edges on a transparent dark
    /// ground, and the caller's resize does not:
    ///
    /// ```swift
    /// let context = ImageDecodingContext(header: header, minimumSize: PixelSize(width: 300, height: 200))
    /// let bitmap = try ImageDecoders.WebP().decode(data, context: context)   // 300x225
    /// ```
    ///
    /// An animation gives its first frame on the canvas: the frame is found with libwebp's demuxer, decoded on
    /// its own and placed at its offset on a transparent canvas of the file's size (scaled like the rest).
    /// Frame 1 has nothing under it to blend with, and no later frame is read. A lossy frame 1 with alpha is
    /// placed on a full-size canvas, up to ``fullSizeAlphaPixels``, as a still picture with alpha is decoded.
    ///
    /// The pixel budget is checked on the output size before decoding, and on the full size too for a
    /// lossless bitstream or one with alpha, which libwebp decodes through buffers of the whole image
    /// whatever the scale. Data that ends early throws
    /// ``ImageDecodingError/Reason/truncated``, features libwebp refuses throw `.unsupportedFeature`, anything
    /// else `.corrupt` with libwebp's status, such as `VP8_STATUS_BITSTREAM_ERROR`.
    ///
    /// In an ``ImageStore`` the file goes to libwebp's incremental decoder a chunk at a time (a sixteenth of
    /// it, at least 64 KiB), and ``ImageDecodingContext/isCancelled`` is read between chunks: a decode nobody
    /// wants stops there and throws ``ImageDecodingError/Reason/cancelled``. The pixels and errors are those
    /// of the one call that decodes a context you make, which nothing can cancel, for any file an encoder
    /// wrote. A lossy file damaged so its arithmetic coding goes out of range, which libwebp does not detect,
    /// decodes to colour that depends on where libwebp's input was cut: in a store, from a file larger than
    /// one chunk, it can come out as different noise than from the one call, at the same size and alpha.
    public struct WebP: ImageDecoding {
        /// The largest lossy picture with alpha (or animation canvas with such a frame 1) decoded at full size
        /// rather than scaled by libwebp, in pixels: 4 megapixels, a 16 MiB bitmap (stickers and logos). Larger
        /// ones are scaled, as other WebPs are.
        public static let fullSizeAlphaPixels = 4 << 20

        /// How many bytes a decode that can be cancelled hands libwebp at a time; `nil` for
        /// ``chunkSize(for:)`` (tests make it small to stop and resume the decoder many times).
        let chunkSize: Int?

        /// Creates a WebP decoder.
        public init() {
            chunkSize = nil
        }

        /// A decoder whose cancellable decodes go `chunkSize` bytes at a time.
        init(chunkSize: Int?) {
            self.chunkSize = chunkSize
        }

        /// Decodes `data` at the smallest size that covers `context.minimumSize`, keeping the aspect ratio.
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            guard !data.isEmpty else { throw ImageDecodingError(format: .webp, reason: .truncated) }
            return try data.withUnsafeBytes { bytes in
                Result { () throws(ImageDecodingError) in
                    try Self.decode(bytes, context: context, chunkSize: chunkSize)
                }
            }.get()
        }

        private static func decode(_ bytes: UnsafeRawBufferPointer, context: ImageDecodingContext, chunkSize: Int?)
            throws(ImageDecodingError) -> Bitmap
        {
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw ImageDecodingError(format: .webp, reason: .truncated)
            }
            var features = WebPBitstreamFeatures()
            try check(WebPGetFeatures(base, bytes.count, &features))
            let canvas = PixelSize(width: Int(features.width), height: Int(features.height))
            // libwebp scales a lossy picture's colour and its alpha apart, so the colour under transparent
            // pixels bleeds into the edges (white on transparent black came out grey, 104 at alpha 8). Such a
            // picture, up to ``fullSizeAlphaPixels``, is decoded at full size and the caller's resize, which
            // weights colour by alpha, makes it smaller. Lossless pictures scale cleanly; a larger one stays
            // scaled: memory before edges. An animation's frame 1 is looked at in ``WebPFirstFrame``, which
            // decodes a lossy one with alpha on a full-size canvas alike.
            let isLossyWithAlpha = features.has_alpha != 0 && features.format == 1 && features.has_animation == 0
            let output =
                isLossyWithAlpha && canvas.pixelCount <= Self.fullSizeAlphaPixels
                ? canvas : canvas.scaledDown(toCover: context.minimumSize)
            try context.checkBudget(output.pixelCount, format: .webp)
            if features.has_animation != 0 {
                // Frame 1's own bitstream is checked there; the canvas is only ever made at the output size.
                return try WebPFirstFrame(bytes).decode(
                    canvas: canvas, output: output, context: context, chunkSize: chunkSize)
            }
            try checkFullSizeBuffers(features, size: canvas, context)
            let byteCount = output.pixelCount * 4
            var failure: ImageDecodingError?
            let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initializedCount in
                do throws(ImageDecodingError) {
                    try decode(
                        bytes, size: canvas, scaledTo: output, into: buffer.baseAddress!,
                        bytesPerRow: output.width * 4, byteCount: byteCount, context: context, chunkSize: chunkSize)
                    initializedCount = byteCount
                } catch {
                    // The pixels are discarded; UInt8 needs no deinitialization either way.
                    failure = error
                    initializedCount = 0
                }
            }
            if let failure { throw failure }
            return Bitmap(width: output.width, height: output.height, pixels: pixels)
        }

        /// Decodes a whole file or one frame's bitstream, `size` pixels, scaled to `scaled`, into memory the caller
        /// owns: rows `bytesPerRow` apart, `byteCount` bytes from `target` on.
        ///
        /// Without a cancellation in `context` (nothing can raise it) libwebp decodes in one call. With one, as in
        /// ``ImageStore``, libwebp's incremental decoder is handed the bytes `chunkSize` more at a time (`nil`
        /// for ``chunkSize(for:)``), which gives the same pixels (but for a damaged lossy bitstream, above), and
        /// the flag is read before each chunk: a decode nobody wants stops within a chunk and throws
        /// ``ImageDecodingError/Reason/cancelled``.
        ///
        /// Bytes that fail in chunks are decoded again in one call, and that call's status is the error: the
        /// incremental decoder words some failures its own way (`VP8_STATUS_USER_ABORT` for damaged alpha,
        /// `VP8_STATUS_BITSTREAM_ERROR` for modes that end early, where the one call reports the data as
        /// truncated), and a file must fail the same way whoever decodes it. Only damaged files pay for it.
        static func decode(
            _ bitstream: UnsafeRawBufferPointer, size: PixelSize, scaledTo scaled: PixelSize,
            into target: UnsafeMutablePointer<UInt8>, bytesPerRow: Int, byteCount: Int,
            context: ImageDecodingContext, chunkSize: Int? = nil
        ) throws(ImageDecodingError) {
            // The incremental decoder keeps pointers into the configuration: it must not move.
            let config = UnsafeMutablePointer<WebPDecoderConfig>.allocate(capacity: 1)
            defer { config.deallocate() }
            guard WebPInitDecoderConfig(config) != 0 else { return try check(VP8_STATUS_INVALID_PARAM) }
            if scaled != size {
                config.pointee.options.use_scaling = 1
                config.pointee.options.scaled_width = Int32(scaled.width)
                config.pointee.options.scaled_height = Int32(scaled.height)
            }
            config.pointee.output.colorspace = MODE_RGBA
            config.pointee.output.is_external_memory = 1
            config.pointee.output.u.RGBA.rgba = target
            config.pointee.output.u.RGBA.stride = Int32(bytesPerRow)
            config.pointee.output.u.RGBA.size = byteCount
            // Frees nothing of ours (the memory is external), only what libwebp may have attached.
            defer { WebPFreeDecBuffer(&config.pointee.output) }
            let bytes = bitstream.baseAddress?.assumingMemoryBound(to: UInt8.self)
            // Sizes that say bytes are missing are the one call's to report, before it decodes anything.
            if let cancellation = context.cancellation, let bytes, !declaresMissingBytes(bitstream) {
                let status = try decodeInChunks(
                    bytes, count: bitstream.count, chunkSize: max(1, chunkSize ?? Self.chunkSize(for: bitstream.count)),
                    config: config, rows: scaled.height, cancellation: cancellation)
                if status == VP8_STATUS_OK { return }
                try context.checkCancellation(format: .webp)
            }
            try check(WebPDecode(bytes, bitstream.count, config))
        }

        /// Hands the incremental decoder `count` bytes from `bytes` on, `chunkSize` more at a time, reporting
        /// the rows decoded after each chunk; throws ``ImageDecodingError/Reason/cancelled`` when `cancellation`
        /// is raised before a chunk. Returns the last status, `VP8_STATUS_SUSPENDED` when every byte was handed
        /// and libwebp still wants more.
        private static func decodeInChunks(
            _ bytes: UnsafePointer<UInt8>, count: Int, chunkSize: Int, config: UnsafeMutablePointer<WebPDecoderConfig>,
            rows: Int, cancellation: DecodeCancellation
        ) throws(ImageDecodingError) -> VP8StatusCode {
            guard let decoder = WebPIDecode(nil, 0, config) else { return VP8_STATUS_OUT_OF_MEMORY }
            defer { WebPIDelete(decoder) }
            var handed = 0
            var status = VP8_STATUS_SUSPENDED
            while status == VP8_STATUS_SUSPENDED, handed < count {
                guard !cancellation.isCancelled else { throw ImageDecodingError(format: .webp, reason: .cancelled) }
                handed += min(chunkSize, count - handed)
                // The bytes stay where they are: libwebp reads them in place, up to `handed`.
                status = WebPIUpdate(decoder, bytes, handed)
                var lastRow: Int32 = 0
                if WebPIDecGetRGB(decoder, &lastRow, nil, nil, nil) != nil {
                    cancellation.report(rowsDecoded: Int(lastRow), of: rows)
                }
            }
            return status
        }

        /// How many bytes a cancellable decode hands libwebp at a time: a sixteenth of the bitstream, at least
        /// 64 KiB. Every chunk may repeat a little work (a lossless decode resumes from its last checkpoint, up
        /// to 8 rows back), so the chunks are few: a 4000x2667 lossy photo of 480 KB goes in 8 (about 14 ms of
        /// decoding each, here) and as fast as in one call; its lossless file of 8.8 MB in 17, where chunks of
        /// 16 KiB made it 40 % slower.
        static func chunkSize(for count: Int) -> Int {
            max(count / 16, 64 * 1024)
        }

        /// Decodes `data` in one call and as a store does, through the incremental decoder `chunkSize` bytes
        /// at a time with a cancellation nobody raises, and stops the process if the two give different
        /// errors or different pixels (the fuzzer); `false` where the one call fails. Where the file is not
        /// wholly lossless only sizes and alpha are compared: libwebp's colour for a lossy bitstream whose
        /// arithmetic coding is out of range, as damage makes it, depends on where the input was cut.
        @_spi(Fuzzing) public static func fuzzChunkedAgreement(
            _ data: Data, context: ImageDecodingContext, chunkSize: Int
        ) -> Bool {
            let whole = Result { () throws(ImageDecodingError) in try WebP().decode(data, context: context) }
            var chunked = context
            chunked.cancellation = DecodeCancellation()
            let inChunks = Result { () throws(ImageDecodingError) in
                try WebP(chunkSize: chunkSize).decode(data, context: chunked)
            }
            let agree =
                switch (whole, inChunks) {
                case (.success(let one), .success(let chunks)) where !isLossless(data):
                    one.pixelSize == chunks.pixelSize && one.alphaChannel == chunks.alphaChannel
                default: whole == inChunks
                }
            precondition(agree, "one call and the chunks disagree: \(whole) against \(inChunks)")
            return (try? whole.get()) != nil
        }

        /// Whether libwebp reads `data` as one lossless (VP8L) bitstream.
        private static func isLossless(_ data: Data) -> Bool {
            var features = WebPBitstreamFeatures()
            let status = data.withUnsafeBytes { bytes in
                WebPGetFeatures(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &features)
            }
            return status == VP8_STATUS_OK && features.format == 2
        }

        /// Whether `bitstream` declares more bytes than it holds where libwebp's one call (`WebPDecode`) looks
        /// before it decodes anything, and so reports the data as truncated: the RIFF size, and the size of the
        /// VP8 or VP8L chunk (after a VP8X chunk and the optional chunks, or after an ALPH chunk in a frame's
        /// bitstream). The incremental decoder never learns that every byte has come and would decode such a
        /// file whose image data is whole, a file cut in the metadata after it for one; `WebPGetFeatures` has
        /// reported malformed headers already.
        static func declaresMissingBytes(_ bitstream: UnsafeRawBufferPointer) -> Bool {
            guard let base = bitstream.baseAddress else { return false }
            // Read in place, through the header reader's bounds-checked window.
            let bytes = HeaderBytes(
                Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bitstream.count, deallocator: .none),
                format: .webp)
            func isImageData(at offset: Int) -> Bool {
                bytes.matches("VP8 ", at: offset) || bytes.matches("VP8L", at: offset)
            }
            var offset = 0
            let isRIFF = bytes.matches("RIFF", at: 0) && bytes.count >= 12
            if isRIFF {
                guard let riffSize = try? bytes.uint32LE(at: 4), riffSize <= bytes.count - 8 else { return true }
                offset = 12
            }
            let isVP8X = bytes.matches("VP8X", at: offset)
            if isVP8X { offset += 18 }
            if (isRIFF && isVP8X) || (!isRIFF && !isVP8X && bytes.matches("ALPH", at: offset)) {
                // The optional chunks, each padded to an even size, up to the image data.
                while bytes.contains(offset, length: 4), !isImageData(at: offset) {
                    guard let size = try? bytes.uint32LE(at: offset + 4) else { return false }
                    offset += 8 + size + (size & 1)
                }
            }
            guard isImageData(at: offset), let size = try? bytes.uint32LE(at: offset + 4) else { return false }
            return size > bytes.count - offset - 8
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
