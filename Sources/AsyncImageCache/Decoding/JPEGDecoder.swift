#if canImport(CJPEGSupport)
import CJPEGSupport
import Foundation

extension ImageDecoders {
    /// Decodes 8-bit JPEG with libjpeg-turbo, at the smallest DCT scale that covers the size asked for.
    ///
    /// Baseline, extended, progressive and arithmetic-coded files decode, with any chroma subsampling
    /// and restart markers, from grayscale, YCbCr, RGB, CMYK and YCCK (Adobe's inverted CMYK included).
    /// The result is 8-bit RGBA with opaque alpha, in stored orientation. CMYK and YCCK convert through
    /// the file's embedded CMYK profile when it has one (its `A2B0` table, of the lut8, lut16 or lutAtoB
    /// kind), as a press would print them and as ImageIO shows them; else by multiplying each colour by black.
    ///
    /// libjpeg scales in the DCT domain by `n/8` for `n` in 1...8, so a 4000x3000 photo shown 300 pixels
    /// wide decodes as 500x375 and the full bitmap never exists. At 1/8, a baseline file goes through
    /// the package's own DC-only decoder instead, split between two threads (in the store: for a visible
    /// load, when a core is idle), with the same pixels as libjpeg-turbo's:
    ///
    /// ```swift
    /// let context = ImageDecodingContext(header: header, minimumSize: PixelSize(width: 300, height: 225))
    /// let bitmap = try ImageDecoders.JPEG().decode(data, context: context)   // 500x375
    /// ```
    ///
    /// Errors: data that ends early throws ``ImageDecodingError/Reason/truncated`` (libjpeg would pad it
    /// with gray); data that holds every scan and stops where its EOI marker would be is the whole image, as
    /// djpeg and browsers show it (but for arithmetic coding, whose end cannot be told from a cut); a
    /// damaged interval of a file with restart markers costs only its band (libjpeg goes on at the next
    /// marker, as djpeg does); 12-bit files throw `.unsupportedFeature("12-bit")`, and
    /// a side over libjpeg-turbo's 65500 pixels (JPEG allows 65535) `.unsupportedFeature` with libjpeg's
    /// message, as does a frame of other than 1, 3 or 4 components (JPEG allows 255, libjpeg reads 10)
    /// and a file of more than ``maximumScans`` scans (`"more than 500 scans"`); anything malformed throws
    /// `.corrupt` with libjpeg's message; once ``ImageDecodingContext/isCancelled`` is raised the decode
    /// stops within a few rows with `.cancelled`. A bitmap past ``ImageDecodingContext/pixelBudget`` is
    /// refused before it is allocated. Progressive and multi-scan files keep the coefficients of the *full*
    /// image in memory whatever the scale, so for them the full pixel count is checked against the budget too.
    /// So it is for arithmetic-coded files, whose decoding time is bounded by their full size and not by
    /// their bytes: a few kilobytes can declare 65500x65500, and all of it must be decoded.
    public struct JPEG: ImageDecoding {
        /// Whether a 1/8 scale may come from the DC-only decoder (see ``decodeFromDC(_:_:threads:alwaysSplit:)``);
        /// tests turn it off to compare with libjpeg.
        var allowsDCShortcut = true

        /// Creates a JPEG decoder.
        public init() {}

        /// The most scans a file may have, 500, as libjpeg-turbo advises (djpeg's `-maxscans`): a file with
        /// more throws ``ImageDecodingError/Reason/unsupportedFeature(_:)`` as the decode reaches the next
        /// one. Each scan of a progressive file goes over every block of the image, and one that gives
        /// thousands of blocks no AC coefficients takes a few bytes, so without a limit a small file could
        /// keep a decode busy for minutes (2,000 such scans of an 8000x8000 image, 319 KB, took 6.9 s).
        /// Encoders write about ten.
        public static let maximumScans = Int(CJPEG_MAX_SCANS)

        /// Decodes `data` at the smallest scale that covers `context.minimumSize` and keeps at least 8
        /// pixels a side (full size for an image under 8 pixels on a side).
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            try decode(data, context: context, memoryLimit: Self.memoryLimit(forPixelBudget: context.pixelBudget))
        }

        /// Decodes with an explicit cap on libjpeg's own memory, in bytes (tests lower it).
        func decode(_ data: Data, context: ImageDecodingContext, memoryLimit: Int) throws(ImageDecodingError)
            -> Bitmap
        {
            guard !data.isEmpty else { throw ImageDecodingError(format: .jpeg, reason: .truncated) }
            return try data.withUnsafeBytes { bytes in
                Self.withDecoder(bytes, context: context, memoryLimit: memoryLimit) { decoder, sizes in
                    if allowsDCShortcut,
                        let bitmap = Self.decodeFromDC(
                            decoder, sizes, threads: ProcessInfo.processInfo.activeProcessorCount)
                    {
                        return .success(bitmap)
                    }
                    // The DC-only decoder also stops when cancelled: not worth starting libjpeg then.
                    if context.isCancelled { return .failure(Self.cancelledError) }
                    return Self.decodeWhole(decoder, sizes, context)
                }
            }.get()
        }

        /// The numerator `n` of the smallest scale `n/8` at which an image of `imageSize` still covers
        /// `minimumSize` in both dimensions and keeps at least 8 pixels a side; 8 (full size) when
        /// `minimumSize` is `nil` or larger than the image, or when no smaller scale keeps 8 pixels a side.
        ///
        /// What covers is the span of the picture, `side * n / 8`, not the `ceil(side * n / 8)` pixels libjpeg
        /// outputs: a side that is a partial block at that scale (3 pixels at 1/8) comes out as one pixel made
        /// mostly of the encoder's padding, so a 1000x3 photo asked to cover 125x1 would decode at 3/8, not 1/8.
        /// And a side scaled to a few pixels is a few block averages, padding included, not the picture the
        /// resize of the full decode sees (1000x3 at widths 376-999 came out 26-31 dB from it, 17x5 at width 7
        /// 28.8 dB): a side under 8 pixels at `n/8` (under `64 / n` stored) takes a larger scale, full size for
        /// a side under 8. Photos keep their scales: their sides are hundreds of pixels even at 1/8.
        static func scaleNumerator(imageSize: PixelSize, covering minimumSize: PixelSize?) -> Int {
            // No scale under 1 covers a side the image does not exceed; checked first, this also keeps the
            // products below from overflowing for a minimum past Int.max / 8 (a caller's "as large as it gets").
            guard let minimumSize, minimumSize.width < imageSize.width, minimumSize.height < imageSize.height else {
                return 8
            }
            // A side under 0 asks for no pixels, as 0 does; below Int.min / 8 its product would overflow too.
            let (width, height) = (max(0, minimumSize.width), max(0, minimumSize.height))
            let shortSide = min(imageSize.width, imageSize.height)
            for numerator in 1..<8
            where imageSize.width * numerator >= width * 8 && imageSize.height * numerator >= height * 8
                && shortSide * numerator >= 64
            {
                return numerator
            }
            return 8
        }

        /// The output size libjpeg produces at scale `numerator/8`: each dimension rounded up.
        static func scaledSize(_ size: PixelSize, numerator: Int) -> PixelSize {
            PixelSize(width: (size.width * numerator + 7) / 8, height: (size.height * numerator + 7) / 8)
        }

        /// The width and height the picture spans in a decode of an image of `size` at `numerator / 8`,
        /// when that falls short of the ``scaledSize(_:numerator:)`` libjpeg outputs (the last column or row
        /// is a partial block, padded by the encoder): `side * numerator / 8`. `nil` when the picture fills
        /// the output, as it always does at full size.
        static func pictureExtent(_ size: PixelSize, numerator: Int) -> SIMD2<Double>? {
            let output = scaledSize(size, numerator: numerator)
            let extent = SIMD2(Double(size.width), Double(size.height)) * (Double(numerator) / 8)
            return extent == SIMD2(Double(output.width), Double(output.height)) ? nil : extent
        }

        /// The cap on libjpeg's own memory for `pixelBudget`: room for the whole-image coefficients of a
        /// four-component image at the budget (8 bytes a pixel) plus 32 MiB of working buffers.
        static func memoryLimit(forPixelBudget pixelBudget: Int) -> Int {
            let (coefficients, overflow) = max(pixelBudget, 0).multipliedReportingOverflow(by: 8)
            let (limit, overflowAgain) = coefficients.addingReportingOverflow(32 << 20)
            return overflow || overflowAgain ? Int.max : limit
        }

        /// Decodes at the smallest scale that covers `size` and resamples to exactly `size` (as
        /// ``Bitmap/resized(to:)`` would), row by row as libjpeg hands rows out. At scale `n/8` the picture
        /// spans `side * n / 8` of the `ceil(side * n / 8)` pixels decoded (the last column and row are
        /// partial blocks, padded by the encoder), and the resample maps that span onto `size`: the
        /// picture lands where a resize of the full image puts it, not stretched by up to 7/8 of a pixel.
        ///
        /// With `overlapping`, the resampling runs on a second thread while rows decode (the shortest
        /// time when a core is idle); without, it follows the decode on this thread through a ring of
        /// a few rows (the least CPU and memory when every core is busy).
        func decode(
            _ data: Data, context: ImageDecodingContext, resizedTo size: PixelSize, overlapping: Bool = true
        ) throws(ImageDecodingError) -> Bitmap {
            guard !data.isEmpty else { throw ImageDecodingError(format: .jpeg, reason: .truncated) }
            let memoryLimit = Self.memoryLimit(forPixelBudget: context.pixelBudget)
            return try data.withUnsafeBytes { bytes in
                Self.withDecoder(bytes, context: context, memoryLimit: memoryLimit) { decoder, sizes in
                    let outputSize = sizes.output
                    // At scale n/8 the picture spans side * n / 8 of the ceil(side * n / 8) pixels decoded:
                    // the last column and row are partial blocks, padded by the encoder.
                    let extent = Self.pictureExtent(sizes.image, numerator: sizes.numerator)
                    if allowsDCShortcut, let bitmap = Self.decodeFromDC(decoder, sizes, threads: overlapping ? 2 : 1) {
                        if outputSize == size && extent == nil { return .success(bitmap) }
                        return bitmap.resized(
                            to: size, sourceExtent: extent, cancellation: context.cancellation,
                            usesOtherThreads: overlapping
                        )
                        .map { .success($0) } ?? .failure(Self.cancelledError)
                    }
                    if context.isCancelled { return .failure(Self.cancelledError) }
                    guard outputSize != size || extent != nil else { return Self.decodeWhole(decoder, sizes, context) }
                    var status = cjpeg_decoder_start(decoder)
                    guard status == CJPEG_STATUS_OK else {
                        return .failure(Self.error(status, decoder, context, sizes.image))
                    }
                    let resampler = RowResampler.reused(
                        sourceSize: outputSize, targetSize: size, isOpaque: true, sourceExtent: extent)
                    // Batches big enough to amortize a hand-over, small enough to start early; the
                    // streaming resize asks for fewer rows than that.
                    let batch = max(8, outputSize.height / 32)
                    let read = { (rows: UnsafeMutablePointer<UInt8>, first: Int, limit: Int) -> Int? in
                        var count: Int32 = 0
                        let wanted = Int32(clamping: min(batch, limit))
                        status = cjpeg_decoder_read_rows(decoder, rows, outputSize.width * 4, wanted, &count)
                        guard status == CJPEG_STATUS_OK else { return nil }
                        context.cancellation?.report(rowsDecoded: first + Int(count), of: outputSize.height)
                        return Int(count)
                    }
                    let pixels =
                        overlapping
                        ? resampler.resample(producingRowsWith: read) : resampler.resample(streamingRowsWith: read)
                    guard let pixels else { return .failure(Self.error(status, decoder, context, sizes.image)) }
                    return .success(Bitmap(width: size.width, height: size.height, pixels: pixels))
                }
            }.get()
        }

        /// Decodes the 1/8 scale from DC coefficients alone when the file allows it: baseline Huffman
        /// coding, one scan, YCbCr or grayscale, no restart interval (the C side says exactly). That
        /// scale is all entropy decoding, which libjpeg does on one thread; this splits the data between
        /// `threads` (1 or 2) where it is large enough, or always with `alwaysSplit` (tests), and gives
        /// the same pixels whichever way it ran. `nil` when it declines: decode with libjpeg then, which
        /// also gives the errors of damaged data.
        static func decodeFromDC(_ decoder: OpaquePointer, _ sizes: Scales, threads: Int, alwaysSplit: Bool = false)
            -> Bitmap?
        {
            // It holds the whole 1/8 bitmap, and split in two a record per block of the second half
            // (as much again), where the row-by-row path holds a few rows: past 4 megapixels at 1/8
            // (a 256-megapixel photo), memory matters more than the second core.
            guard sizes.output.pixelCount > 0, sizes.output.pixelCount <= 1 << 22,
                cjpeg_decoder_can_decode_dc(decoder) != 0
            else { return nil }
            let byteCount = sizes.output.pixelCount * 4
            var status = CJPEG_STATUS_DECLINED
            let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initializedCount in
                status = cjpeg_decoder_decode_dc_rgba(
                    decoder, buffer.baseAddress, sizes.output.width * 4, byteCount, Int32(min(max(threads, 1), 2)),
                    alwaysSplit ? 1 : 0)
                initializedCount = status == CJPEG_STATUS_OK ? byteCount : 0
            }
            guard status == CJPEG_STATUS_OK else { return nil }
            return Bitmap(width: sizes.output.width, height: sizes.output.height, pixels: pixels)
        }

        /// The DC-only decode of `data` at 1/8 scale, or `nil` where it declines (tests).
        func decodeFromDC(_ data: Data, threads: Int, alwaysSplit: Bool) -> Bitmap? {
            data.withUnsafeBytes { bytes -> Bitmap? in
                // At 1/8 whatever the size (a thin image's own decode takes a larger scale); the header's
                // size is not read here.
                let context = ImageDecodingContext(
                    header: ImageHeader(format: .jpeg, storedSize: PixelSize(width: 1, height: 1)))
                let declined = ImageDecodingError(
                    format: .jpeg, reason: .unsupportedFeature("not for the DC-only decoder"))
                let result = Self.withDecoder(bytes, context: context, memoryLimit: 0, numerator: 1) { decoder, sizes in
                    Self.decodeFromDC(decoder, sizes, threads: threads, alwaysSplit: alwaysSplit).map { .success($0) }
                        ?? .failure(declined)
                }
                return try? result.get()
            }
        }

        /// Reads the header, checks the budget and sets the scale (`numerator / 8` when given, else the one
        /// ``scaleNumerator(imageSize:covering:)`` picks), then hands the decoder and the sizes to `body`.
        private static func withDecoder(
            _ bytes: UnsafeRawBufferPointer, context: ImageDecodingContext, memoryLimit: Int, numerator: Int? = nil,
            _ body: (OpaquePointer, Scales) -> Result<Bitmap, ImageDecodingError>
        ) -> Result<Bitmap, ImageDecodingError> {
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                let decoder = cjpeg_decoder_create(base, bytes.count, memoryLimit)
            else {
                return .failure(ImageDecodingError(format: .jpeg, reason: .corrupt("cannot create a libjpeg decoder")))
            }
            defer { cjpeg_decoder_destroy(decoder) }

            var header = cjpeg_header()
            var status = cjpeg_decoder_read_header(decoder, &header)
            guard status == CJPEG_STATUS_OK else { return .failure(error(status, decoder, context, nil)) }
            let imageSize = PixelSize(width: Int(header.width), height: Int(header.height))
            // libjpeg allocates this buffer in jpeg_start_decompress, before any output scale applies.
            // An arithmetic-coded scan needs no such buffer, but its work is not bounded by its bytes:
            // runs of the likelier symbol cost next to nothing, so a 5.7 KB file can truly hold a
            // 65500x65500 gray image, and decoding its every block took 14 to 50 s of CPU at 1/8.
            let countsFullSize = header.needs_whole_image_buffer != 0 || header.is_arithmetic != 0
            if countsFullSize && imageSize.pixelCount > context.pixelBudget {
                return .failure(budgetError(pixels: imageSize.pixelCount, context))
            }

            if let cancellation = context.cancellation {
                // The context, and so the flag, outlives the decoder.
                cjpeg_decoder_set_cancel_flag(decoder, cancellation.flagAddress)
            }

            let numerator = numerator ?? scaleNumerator(imageSize: imageSize, covering: context.minimumSize)
            var outputWidth: Int32 = 0
            var outputHeight: Int32 = 0
            status = cjpeg_decoder_set_scale(decoder, Int32(numerator), &outputWidth, &outputHeight)
            guard status == CJPEG_STATUS_OK else { return .failure(error(status, decoder, context, imageSize)) }
            let outputSize = PixelSize(width: Int(outputWidth), height: Int(outputHeight))
            guard outputSize.pixelCount <= context.pixelBudget else {
                return .failure(budgetError(pixels: outputSize.pixelCount, context))
            }
            guard header.color_space == CJPEG_COLOR_CMYK || header.color_space == CJPEG_COLOR_YCCK,
                let profile = cmykProfile(in: bytes, base: base)
            else { return body(decoder, Scales(image: imageSize, output: outputSize, numerator: numerator)) }
            // Each row of ink goes through the profile as it decodes, whichever way the rows are read.
            return withExtendedLifetime(profile) {
                cjpeg_decoder_set_ink_transform(
                    decoder,
                    { row, width, context in
                        guard let row, let context else { return }
                        Unmanaged<CMYKProfile>.fromOpaque(context).takeUnretainedValue().convert(row, width: width)
                    }, Unmanaged.passUnretained(profile).toOpaque())
                return body(decoder, Scales(image: imageSize, output: outputSize, numerator: numerator))
            }
        }

        /// The CMYK profile embedded in the JPEG at `base` (`bytes`), when it has one ``CMYKProfile`` reads.
        private static func cmykProfile(in bytes: UnsafeRawBufferPointer, base: UnsafePointer<UInt8>) -> CMYKProfile? {
            // The bytes outlive this call; the Data only looks at them.
            let data = Data(
                bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
            return ColorProfile.embeddedICCData(in: data, format: .jpeg, largest: CMYKProfile.largestProfile)
                .flatMap(CMYKProfile.init(iccData:))
        }

        /// The stored size of an image and the size it decodes to at the scale set.
        struct Scales {
            let image: PixelSize
            let output: PixelSize
            /// The scale is `numerator / 8`.
            let numerator: Int
        }

        /// Decodes every row into a bitmap of the output size.
        private static func decodeWhole(_ decoder: OpaquePointer, _ sizes: Scales, _ context: ImageDecodingContext)
            -> Result<Bitmap, ImageDecodingError>
        {
            let outputSize = sizes.output
            let byteCount = outputSize.pixelCount * 4
            let bytesPerRow = outputSize.width * 4
            var status = CJPEG_STATUS_OK
            let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initializedCount in
                status = cjpeg_decoder_decode_rgba(decoder, buffer.baseAddress, bytesPerRow, byteCount)
                // On failure the pixels are discarded; UInt8 needs no deinitialization either way.
                initializedCount = status == CJPEG_STATUS_OK ? byteCount : 0
            }
            guard status == CJPEG_STATUS_OK else { return .failure(error(status, decoder, context, sizes.image)) }
            return .success(Bitmap(width: outputSize.width, height: outputSize.height, pixels: pixels))
        }

        /// The DC-only decode on `threads` threads, `nil` where it declines (benchmarks).
        @_spi(Benchmarks) public func benchmarkDecodeFromDC(_ data: Data, threads: Int) -> Bitmap? {
            decodeFromDC(data, threads: threads, alwaysSplit: false)
        }

        /// The store's decode at the smallest DCT scale covering `size`, resized to exactly `size` as
        /// rows decode, on this thread alone or overlapping on a second one (benchmarks).
        @_spi(Benchmarks) public func benchmarkDecodeResizing(
            _ data: Data, context: ImageDecodingContext, to size: PixelSize, overlapping: Bool
        ) throws(ImageDecodingError) -> Bitmap {
            try decode(data, context: context, resizedTo: size, overlapping: overlapping)
        }

        /// libjpeg's decode at the scale `context` asks for, without the DC-only decoder (benchmarks).
        @_spi(Benchmarks) public func benchmarkDecodeWithLibjpeg(_ data: Data, context: ImageDecodingContext)
            throws(ImageDecodingError) -> Bitmap
        {
            var plain = self
            plain.allowsDCShortcut = false
            return try plain.decode(data, context: context)
        }

        /// Decodes `data` at 1/8 scale from DC coefficients on one thread and split between two, and
        /// stops the process if the two differ; `false` where the decoder declines (the fuzzer).
        @_spi(Fuzzing) public static func fuzzDCDecodeAgreement(_ data: Data) -> Bool {
            let one = JPEG().decodeFromDC(data, threads: 1, alwaysSplit: false)
            let two = JPEG().decodeFromDC(data, threads: 2, alwaysSplit: true)
            precondition(one?.pixels == two?.pixels, "the DC decoder gave different pixels on two threads")
            return one != nil
        }

        /// A decode stopped because nobody wants it any more.
        private static let cancelledError = ImageDecodingError(format: .jpeg, reason: .cancelled)

        private static func budgetError(pixels: Int, _ context: ImageDecodingContext) -> ImageDecodingError {
            ImageDecodingError(format: .jpeg, reason: .pixelBudgetExceeded(pixels: pixels, budget: context.pixelBudget))
        }

        private static func error(
            _ status: cjpeg_status,
            _ decoder: OpaquePointer,
            _ context: ImageDecodingContext,
            _ imageSize: PixelSize?
        ) -> ImageDecodingError {
            let message = String(cString: cjpeg_decoder_message(decoder))
            switch status {
            case CJPEG_STATUS_TRUNCATED:
                return ImageDecodingError(format: .jpeg, reason: .truncated)
            case CJPEG_STATUS_UNSUPPORTED:
                return ImageDecodingError(format: .jpeg, reason: .unsupportedFeature(message))
            case CJPEG_STATUS_MEMORY_LIMIT:
                // The memory cap is derived from the pixel budget, so running into it is running past the budget.
                return budgetError(pixels: imageSize?.pixelCount ?? Int.max, context)
            case CJPEG_STATUS_CANCELLED:
                return cancelledError
            case CJPEG_STATUS_INVALID_ARGUMENT:
                return ImageDecodingError(format: .jpeg, reason: .corrupt("libjpeg wrapper refused the call"))
            default:
                return ImageDecodingError(format: .jpeg, reason: .corrupt(message.isEmpty ? "libjpeg failed" : message))
            }
        }
    }
}
#endif
