#if canImport(CPNG)
import CPNG
import CPNGSupport
import Foundation

extension ImageDecoders {
    /// Decodes PNG with libpng's simplified API into 8-bit straight RGBA.
    ///
    /// Every PNG colour type and bit depth decodes, interlaced or not: 16-bit samples are reduced to 8 bits
    /// (read as sRGB when the file has no gAMA or sRGB chunk, as browsers read them),
    /// palettes expanded (with `tRNS` transparency), grayscale widened to RGB. PNG has no reduced-size
    /// decode, so the bitmap is always full size and the caller resizes; the pixel budget is checked on
    /// the header's size before the bitmap is allocated.
    ///
    /// ```swift
    /// let bitmap = try ImageDecoders.PNG().decode(data, context: ImageDecodingContext(header: header))
    /// ```
    ///
    /// A file with both a gAMA chunk and an ICC profile that ``ImageStore`` converts with keeps its
    /// samples as stored: the PNG specification has a
    /// colour-managing decoder use the profile and ignore gAMA, and correcting by both would be applying
    /// a tone curve twice (a gAMA of 1.0 under a Display P3 profile came out up to 156 levels off).
    ///
    /// libpng's simplified API catches its own errors and reports them in `png_image.message`, so no
    /// `setjmp` is needed here. Malformed data throws `.corrupt` with that message, data that ends early
    /// throws `.truncated`.
    public struct PNG: ImageDecoding {
        /// Creates a PNG decoder.
        public init() {}

        /// Decodes `data` at full size; `context.minimumSize` is ignored.
        ///
        /// In an ``ImageStore`` (a context with a cancellation) a file the row reader reads right goes through
        /// it row by row, an Adam7 file pass by pass, to the simplified API's pixels, and
        /// ``ImageDecodingContext/isCancelled`` is read every 8 rows: a decode nobody wants stops there and
        /// throws ``ImageDecodingError/Reason/cancelled``. The files it does not read right (a gamma that
        /// libpng corrects, Adam7 at 16 bits) and a context you make, which nothing can cancel, are decoded
        /// whole: 16-bit ones with a gamma that libpng corrects or Adam7 rows are read by libpng's row API
        /// and converted here, and the flag is read every 8 rows there too; the others go to the simplified
        /// API, which reads the image in one call, and the flag is only looked at before it starts. A file the rows fail on is decoded again by the simplified API, whose outcome stands, so
        /// that a file ends the same way whoever decodes it.
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            try context.checkCancellation(format: .png)
            if context.cancellation != nil {
                let rows = Result { () throws(ImageDecodingError) in try decodeRowByRow(data, context: context) }
                switch rows {
                case .success(let bitmap?): return bitmap
                case .success(nil): break
                case .failure(let error) where error.reason == .cancelled: throw error
                case .failure: try context.checkCancellation(format: .png)
                }
            }
            return try decode(data, context: context, sixteenBitPath: .automatic)
        }

        /// Decodes `data` and resamples it to exactly `size` (as ``Bitmap/resized(to:)`` would) row by row,
        /// so the full-size bitmap never exists: an 8000x6000 file shown 320 wide holds a few of its rows
        /// and the result, not 192 MB. The pixels are the simplified API's. `nil` when `size` is the
        /// file's own, for a file only a whole-image decode reads right (Adam7-interlaced, or with a
        /// gamma that libpng corrects), or for one so wide that its resize averages pixels first (see
        /// ``Bitmap/resized(to:)``): decode those whole and resize. The pixel budget applies as in
        /// ``decode(_:context:)``.
        func decode(_ data: Data, context: ImageDecodingContext, resizedTo size: PixelSize)
            throws(ImageDecodingError) -> Bitmap?
        {
            try Self.readable(data).withUnsafeBytes { bytes in
                Self.decodeStreaming(bytes.bindMemory(to: UInt8.self), context: context, resizedTo: size)
            }.get()
        }

        /// Every row of `data` through the row reader into a full bitmap, an Adam7 file's rows once per pass:
        /// the simplified API's pixels (what the resize consumes, and what a cancellable whole decode gives).
        /// Reads ``ImageDecodingContext/isCancelled`` before every ``rowsPerCheck`` rows and throws `.cancelled`
        /// once it is raised, and reports the rows read after each batch (an Adam7 file has 7 times its
        /// height). `nil` for a file only the simplified API reads right: a gamma it corrects, Adam7 at 16 bits.
        func decodeRowByRow(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap? {
            try Self.readable(data).withUnsafeBytes { bytes in
                Self.withRowReader(bytes.bindMemory(to: UInt8.self), context: context, readingPasses: true) {
                    reader, size, _, passes in
                    let (bytesPerRow, byteCount) = (size.width * 4, size.pixelCount * 4)
                    var read = true
                    let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initializedCount in
                        var rowsRead = 0
                        // Each pass goes over every row; together they write every pixel once.
                        passes: for _ in 0..<passes {
                            for first in stride(from: 0, to: size.height, by: Self.rowsPerCheck) {
                                let count = min(Self.rowsPerCheck, size.height - first)
                                guard !context.isCancelled,
                                    cpng_reader_read_rows(
                                        reader, buffer.baseAddress! + first * bytesPerRow, bytesPerRow, UInt32(count))
                                        == 0
                                else {
                                    read = false
                                    break passes
                                }
                                rowsRead += count
                                context.cancellation?.report(rowsDecoded: rowsRead, of: size.height * passes)
                            }
                        }
                        // On failure the pixels are discarded; UInt8 needs no deinitialization either way.
                        initializedCount = read ? byteCount : 0
                    }
                    return read ? Bitmap(width: size.width, height: size.height, pixels: pixels) : nil
                }
            }.get()
        }

        /// How many rows the row reader reads between two looks at the cancellation: one atomic read a batch.
        static var rowsPerCheck: Int { 8 }

        /// Reads `data` through the row reader and through the simplified API and stops the process if both
        /// succeed with different pixels; then resizes row by row to `size` (the fuzzer: the two readers
        /// must agree, and neither may read or write outside its buffers). Whether the row reader read it.
        @_spi(Fuzzing) public static func fuzzRowReaderAgreement(
            _ data: Data, context: ImageDecodingContext, resizedTo size: PixelSize
        ) -> Bool {
            guard let rows = try? PNG().decodeRowByRow(data, context: context) else { return false }
            if let whole = try? PNG().decode(data, context: context) {
                precondition(rows.pixels == whole.pixels, "the row reader and the simplified API gave different pixels")
            }
            _ = try? PNG().decode(data, context: context, resizedTo: size)
            return true
        }

        private static func decodeStreaming(
            _ bytes: UnsafeBufferPointer<UInt8>, context: ImageDecodingContext, resizedTo size: PixelSize
        ) -> Result<Bitmap?, ImageDecodingError> {
            withRowReader(bytes, context: context, readingPasses: false) { reader, imageSize, hasAlpha, _ in
                let resampler = RowResampler.reused(sourceSize: imageSize, targetSize: size, isOpaque: !hasAlpha)
                let pixels = resampler.resample(streamingRowsWith: { rows, first, limit in
                    // One atomic read a batch of rows (the resampler's 8): a decode nobody wants stops here.
                    guard !context.isCancelled,
                        cpng_reader_read_rows(reader, rows, imageSize.width * 4, UInt32(limit)) == 0
                    else { return nil }
                    context.cancellation?.report(rowsDecoded: first + limit, of: imageSize.height)
                    return limit
                })
                return pixels.map { Bitmap(width: size.width, height: size.height, pixels: $0) }
            } skippingSize: {
                // A size whose resize averages pixels first (an extremely wide file) resizes the whole image.
                let (columns, rows) = Bitmap.groupsAveragedFirst(from: $0, to: size)
                return $0 == size || columns > 1 || rows > 1
            }
        }

        /// Opens a row reader on `bytes` and runs `body` with it, the image size, whether it has alpha and the
        /// number of passes over the rows (7 for an Adam7 file when `readingPasses`, else 1); `body` returns
        /// `nil` when a read failed, which becomes the reader's error (`.cancelled` once the context is). `nil`
        /// without running `body` for a file that must decode whole (any interlaced one unless
        /// `readingPasses`), or whose size `skippingSize` turns down.
        private static func withRowReader(
            _ bytes: UnsafeBufferPointer<UInt8>, context: ImageDecodingContext, readingPasses: Bool,
            _ body: (OpaquePointer, PixelSize, Bool, Int) -> Bitmap?,
            skippingSize: (PixelSize) -> Bool = { _ in false }
        ) -> Result<Bitmap?, ImageDecodingError> {
            var reader: OpaquePointer?
            var (width, height, hasAlpha, passes): (UInt32, UInt32, Int32, Int32) = (0, 0, 0, 1)
            var message = [CChar](repeating: 0, count: 200)
            let status = withUnsafeMutablePointer(to: &passes) { passes in
                cpng_reader_open(
                    bytes.baseAddress, bytes.count, &reader, &width, &height, &hasAlpha, readingPasses ? passes : nil,
                    &message)
            }
            guard status == CPNG_READER_READY, let reader else {
                if status == CPNG_READER_NEEDS_WHOLE_IMAGE { return .success(nil) }
                let text = message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
                return .failure(error(message: String(decoding: text, as: UTF8.self)))
            }
            defer { cpng_reader_close(reader) }
            let imageSize = PixelSize(width: Int(width), height: Int(height))
            guard imageSize.pixelCount <= context.pixelBudget else {
                let reason = ImageDecodingError.Reason.pixelBudgetExceeded(
                    pixels: imageSize.pixelCount, budget: context.pixelBudget)
                return .failure(ImageDecodingError(format: .png, reason: reason))
            }
            guard !skippingSize(imageSize) else { return .success(nil) }
            guard let bitmap = body(reader, imageSize, hasAlpha != 0, Int(passes)) else {
                if context.isCancelled { return .failure(ImageDecodingError(format: .png, reason: .cancelled)) }
                return .failure(error(message: String(cString: cpng_reader_message(reader))))
            }
            return .success(bitmap)
        }

        /// Decodes `data`, choosing how 16-bit samples are reduced (tests compare the two paths).
        func decode(_ data: Data, context: ImageDecodingContext, sixteenBitPath: SixteenBitPath)
            throws(ImageDecodingError) -> Bitmap
        {
            let readable = try Self.readable(data)
            let path: SixteenBitPath =
                sixteenBitPath == .automatic && Self.correctsGamma(readable) ? .linear : sixteenBitPath
            return try readable.withUnsafeBytes { bytes in
                Self.decode(bytes, context: context, sixteenBitPath: path)
            }.get()
        }

        /// Whether libpng corrects the gamma of `data` on its way to sRGB: a gAMA chunk 4 % or more away from
        /// sRGB's 0.45455 and no sRGB chunk (the row reader's test in RowReader.c). Its 8-bit output of such a
        /// 16-bit file goes through gamma tables of 11 significant bits, which turn the darkest levels of a
        /// linear file black or into steps (samples up to 31 of 65535 came out 0 where 1/2.2 gives up to 8);
        /// its 16-bit samples keep them, so such files take ``SixteenBitPath/linear``. A gAMA or sRGB
        /// chunk whose CRC is wrong counts for nothing, as libpng discards it.
        static func correctsGamma(_ data: Data) -> Bool {
            var (gamma, isSRGB): (Int?, Bool) = (nil, false)
            let bytes = HeaderBytes(data, format: .png)
            _ = try? ImageHeader.walkPNGChunks(bytes, from: 8) { type, offset, length in
                guard type == "sRGB" || type == "gAMA",
                    let crc = try? bytes.uint32BE(at: offset + 8 + length),
                    crc32(data, from: offset + 4, count: length + 4) == crc
                else { return true }
                if type == "sRGB" { isSRGB = true }
                if type == "gAMA", length == 4 { gamma = try? bytes.uint32BE(at: offset + 8) }
                return true
            }
            guard let gamma, !isSRGB else { return false }
            let ratio = Double(gamma) / 45455
            return ratio <= 0.96 || ratio >= 1.04
        }

        /// libpng's longest side: it refuses a larger IHDR as "Invalid IHDR data", which would read as damage.
        static let longestSide = 1_000_000

        /// `data` as libpng should read it (see ``withLargestInflateWindow(_:)`` and
        /// ``ignoringGammaUnderProfile(_:)``), after the checks every
        /// decode starts with: empty data is truncated, and an IHDR with a side over ``longestSide`` throws
        /// ``ImageDecodingError/Reason/unsupportedFeature(_:)``, a valid file (the PNG format allows
        /// 2^31 - 1) that libpng will not read and no refetch would mend. Anything else is left to libpng.
        private static func readable(_ data: Data) throws(ImageDecodingError) -> Data {
            guard !data.isEmpty else { throw ImageDecodingError(format: .png, reason: .truncated) }
            // The signature, IHDR's length and type, then its width and height.
            let bytes = HeaderBytes(data, format: .png)
            if bytes.matches("IHDR", at: 12), let width = try? bytes.uint32BE(at: 16),
                let height = try? bytes.uint32BE(at: 20), max(width, height) > longestSide
            {
                throw ImageDecodingError(format: .png, reason: .unsupportedFeature("a side over 1,000,000 pixels"))
            }
            return ignoringGammaUnderProfile(withLargestInflateWindow(data))
        }

        /// `data` with the zlib header of its image data claiming zlib's largest window, 32 KiB, where it claims
        /// a smaller one; otherwise `data` itself. Some encoders write a window (the header's CINFO) smaller
        /// than the distances their data goes back, which libpng refuses ("invalid distance too far back");
        /// Chrome and Firefox read such files with the largest window (libpng's PNG_MAXIMUM_INFLATE_WINDOW,
        /// crbug.com/807324), which the simplified API cannot be asked for. Inflating with a larger window
        /// than needed gives the same bytes. The header is the first two bytes of the first IDAT; the chunk's
        /// CRC is made right again only when it was right, so damage stays damage.
        static func withLargestInflateWindow(_ data: Data) -> Data {
            let bytes = HeaderBytes(data, format: .png)
            var next = 8
            _ = try? ImageHeader.walkPNGChunks(bytes, from: 8) { _, offset, length in
                next = offset + 12 + length
                return true
            }
            guard bytes.matches("IDAT", at: next + 4), let length = try? bytes.uint32BE(at: next),
                length >= 2, bytes.contains(next + 4, length: length + 8),
                let method = try? bytes.byte(at: next + 8), let flags = try? bytes.byte(at: next + 9),
                method & 0x0F == 8, method >> 4 < 7, (Int(method) << 8 | Int(flags)) % 31 == 0,
                let crc = try? bytes.uint32BE(at: next + 8 + length),
                crc32(data, from: next + 4, count: length + 4) == crc
            else { return data }
            var patched = data
            let start = patched.startIndex + next
            // CMF: deflate with a 32 KiB window; FLG: its level and dictionary bits, the check bits made anew.
            patched[start + 8] = 0x78
            let kept = Int(flags & 0xE0)
            patched[start + 9] = UInt8(kept + (31 - (0x78 << 8 | kept) % 31) % 31)
            let newCRC = crc32(patched, from: next + 4, count: length + 4)
            for index in 0..<4 {
                patched[start + 8 + length + index] = UInt8(truncatingIfNeeded: newCRC >> (24 - 8 * index))
            }
            return patched
        }

        /// The CRC-32 that PNG chunks carry (ISO 3309, as zlib computes it) of `count` bytes of `data` from
        /// `offset` on, counted from its start.
        private static func crc32(_ data: Data, from offset: Int, count: Int) -> Int {
            let start = data.startIndex + offset
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in data[start..<(start + count)] {
                crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
            }
            return Int(crc ^ 0xFFFF_FFFF)
        }

        private static let crcTable: [UInt32] = (0..<256).map { (index: UInt32) in
            (0..<8).reduce(index) { value, _ in value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        }

        /// `data` without its gAMA chunks when it also has an `iCCP` chunk that ``ColorProfile`` reads for
        /// it, so that libpng leaves the samples as stored for the profile to convert; otherwise `data`
        /// itself. Only the chunks before the first IDAT are walked (both must come before it); a file
        /// that breaks off there is left to libpng to report.
        static func ignoringGammaUnderProfile(_ data: Data) -> Data {
            var (gammaChunks, hasProfile): ([Range<Int>], Bool) = ([], false)
            let bytes = HeaderBytes(data, format: .png)
            _ = try? ImageHeader.walkPNGChunks(bytes, from: 8) { type, offset, length in
                // Only whole chunks: the first one cut off ends the walk.
                guard bytes.contains(offset, length: 12 + length) else { return false }
                if type == "gAMA" { gammaChunks.append(offset..<(offset + 12 + length)) }
                if type == "iCCP" { hasProfile = true }
                return true
            }
            guard !gammaChunks.isEmpty, hasProfile, ColorProfile.embedded(in: data, format: .png) != nil else {
                return data
            }
            var stripped = data
            for chunk in gammaChunks.reversed() {
                stripped.removeSubrange((data.startIndex + chunk.lowerBound)..<(data.startIndex + chunk.upperBound))
            }
            return stripped
        }

        private static func decode(
            _ bytes: UnsafeRawBufferPointer,
            context: ImageDecodingContext,
            sixteenBitPath: SixteenBitPath
        ) -> Result<Bitmap, ImageDecodingError> {
            var image = png_image()
            image.version = UInt32(PNG_IMAGE_VERSION)
            // Safe on every path, also after libpng freed the state itself on an error.
            defer { png_image_free(&image) }

            guard png_image_begin_read_from_memory(&image, bytes.baseAddress, bytes.count) != 0 else {
                return .failure(error(from: &image))
            }
            // IHDR is the first chunk of any file begin_read accepts; its last byte is the interlace method.
            let isInterlaced = bytes.count > 28 && bytes[28] != 0
            let isSixteenBit = image.format & UInt32(PNG_FORMAT_FLAG_LINEAR) != 0
            let readsLinear = isSixteenBit && (isInterlaced || sixteenBitPath == .linear)
            image.format = png_image.rgbaFormat
            // Without gAMA or sRGB chunks the simplified API takes 16-bit samples as linear light; such
            // files are sRGB-encoded like 8-bit ones in practice, and browsers and ImageIO read them so.
            image.flags |= UInt32(PNG_IMAGE_FLAG_16BIT_sRGB)
            let size = PixelSize(width: Int(image.width), height: Int(image.height))
            guard size.pixelCount <= context.pixelBudget else {
                let reason = ImageDecodingError.Reason.pixelBudgetExceeded(
                    pixels: size.pixelCount,
                    budget: context.pixelBudget
                )
                return .failure(ImageDecodingError(format: .png, reason: reason))
            }

            if readsLinear { return readSixteenBit(bytes, size: size, context: context) }
            let byteCount = size.pixelCount * 4
            var succeeded = false
            let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initializedCount in
                // A row stride of 0 lets libpng use width * 4, which is the Bitmap's layout.
                succeeded = png_image_finish_read(&image, nil, buffer.baseAddress, 0, nil) != 0
                initializedCount = succeeded ? byteCount : 0
            }
            guard succeeded else { return .failure(error(from: &image)) }
            return .success(Bitmap(width: size.width, height: size.height, pixels: pixels))
        }

        private static func error(from image: inout png_image) -> ImageDecodingError {
            error(message: image.messageText)
        }

        static func error(message: String) -> ImageDecodingError {
            // The simplified reader words a short stream as "read beyond end of data"; libpng's row reader
            // as "Not enough image data" or "... too short".
            let truncationPhrases = ["end of data", "not enough image data", "too short"]
            if truncationPhrases.contains(where: { message.lowercased().contains($0) }) {
                return ImageDecodingError(format: .png, reason: .truncated)
            }
            return ImageDecodingError(format: .png, reason: .corrupt(message.isEmpty ? "libpng failed" : message))
        }
    }
}

extension png_image {
    /// `PNG_FORMAT_RGBA`, which Swift cannot import because the macro is built from other macros.
    static let rgbaFormat = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)

    /// The error or warning libpng left in `message`.
    var messageText: String {
        withUnsafeBytes(of: message) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
#endif
