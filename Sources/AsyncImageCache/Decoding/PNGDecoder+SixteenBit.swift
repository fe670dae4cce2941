#if canImport(CPNG)
import CPNG
import CPNGSupport
import Foundation

extension ImageDecoders.PNG {
    /// How 16-bit files are reduced to 8 bits.
    enum SixteenBitPath {
        /// libpng's own 8-bit output, except for interlaced 16-bit files and those whose gamma libpng
        /// corrects (see ``linear`` and ``ImageDecoders/PNG/correctsGamma(_:)``).
        case automatic
        /// Through libpng's row API at 16 bits, converted here (see
        /// ``ImageDecoders/PNG/readSixteenBit(_:size:context:)``). libpng 1.6.39 as Debian ships it gets
        /// Adam7 16-bit to 8-bit wrong in `png_image_finish_read` (up to 255 off in half the samples:
        /// pnggroup/libpng#853), while its row API reads the 16-bit samples right.
        case linear
    }

    /// Reads a 16-bit file of `size` through libpng's row API as 16-bit straight RGBA, the samples as stored,
    /// and converts them to 8-bit straight RGBA: colour through the file's gamma to linear light and encoded
    /// with libpng's power of 1/2.2 (as its simplified API makes 8-bit output), alpha scaled, a pixel of alpha
    /// 0 all 0 (as libpng's 8-bit output has it).
    ///
    /// Colour is converted apart from alpha. The simplified API's 16-bit linear output, which this path read
    /// before, is premultiplied: a colour under alpha 129 of 65535 (1 of 255) kept some 129 levels of light,
    /// and a dark one none, 17 of 255 off in a test.
    ///
    /// Reads ``ImageDecodingContext/isCancelled`` before every ``rowsPerCheck`` rows, reading and converting,
    /// and throws `.cancelled` once it is raised; reports the rows read after each batch (an Adam7 file has 7
    /// times its height).
    static func readSixteenBit(_ bytes: UnsafeRawBufferPointer, size: PixelSize, context: ImageDecodingContext)
        -> Result<Bitmap, ImageDecodingError>
    {
        var reader: OpaquePointer?
        var (width, height, passes, gamma): (UInt32, UInt32, Int32, Int32) = (0, 0, 1, 45455)
        var message = [CChar](repeating: 0, count: 200)
        let status = cpng_reader_open_16(
            bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &reader, &width, &height, &passes,
            &gamma, &message)
        guard status == CPNG_READER_READY, let reader else {
            let text = message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            return .failure(error(message: String(decoding: text, as: UTF8.self)))
        }
        defer { cpng_reader_close(reader) }
        guard PixelSize(width: Int(width), height: Int(height)) == size else {
            return .failure(error(message: "the row API read a size other than \(size)"))
        }
        let cancelled = ImageDecodingError(format: .png, reason: .cancelled)
        let samplesPerRow = size.width * 4
        var samples = [UInt16](repeating: 0, count: size.pixelCount * 4)
        let read = samples.withUnsafeMutableBytes { samples in
            let base = samples.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var rowsRead = 0
            // Each pass of an Adam7 file goes over every row; together they write every pixel once.
            for _ in 0..<passes {
                for first in stride(from: 0, to: size.height, by: rowsPerCheck) {
                    let count = min(rowsPerCheck, size.height - first)
                    guard !context.isCancelled,
                        cpng_reader_read_rows(
                            reader, base + first * samplesPerRow * 2, samplesPerRow * 2, UInt32(count)) == 0
                    else { return false }
                    rowsRead += count
                    context.cancellation?.report(rowsDecoded: rowsRead, of: size.height * Int(passes))
                }
            }
            return true
        }
        guard read else {
            if context.isCancelled { return .failure(cancelled) }
            return .failure(error(message: String(cString: cpng_reader_message(reader))))
        }
        let encoded = encodingTable(fileGamma: Double(gamma) / 100_000)
        var pixels = [UInt8](repeating: 0, count: samples.count)
        for first in stride(from: 0, to: size.height, by: rowsPerCheck) {
            if context.isCancelled { return .failure(cancelled) }
            let end = min(first + rowsPerCheck, size.height) * samplesPerRow
            for offset in stride(from: first * samplesPerRow, to: end, by: 4) {
                let alpha = Int(samples[offset + 3])
                guard alpha > 0 else { continue }
                for channel in 0..<3 { pixels[offset + channel] = encoded[Int(samples[offset + channel])] }
                // Rounded: 65535 is odd, so no quotient ends in exactly one half.
                pixels[offset + 3] = UInt8((alpha * 255 + 32767) / 65535)
            }
        }
        return .success(Bitmap(width: size.width, height: size.height, pixels: pixels))
    }

    /// The 8-bit level of each 16-bit sample of a file whose gamma is `fileGamma` (0.45455 for sRGB): the
    /// sample to linear light with the power 1 / `fileGamma`, then encoded as libpng's simplified API
    /// encodes "sRGB", a pure power of 1/2.2 (`PNG_DEFAULT_sRGB`, gamma 0.45455), not the piecewise curve of
    /// IEC 61966-2-1. It decodes with the same power, so an sRGB file's samples are only scaled; and so are
    /// those of a file whose gamma times 2.2 is within 5 % of 1, which libpng leaves uncorrected
    /// (`PNG_GAMMA_THRESHOLD`): an interlaced file, always read here, comes out as the same file
    /// sequential does from the simplified API (a gamma of 0.47 gave levels up to 3 apart).
    static func encodingTable(fileGamma: Double) -> [UInt8] {
        let exponent = abs(fileGamma * 2.2 - 1) <= 0.05 ? 1 : 0.45455 / fileGamma
        return (0...65535).map { UInt8((pow(Double($0) / 65535, exponent) * 255).rounded()) }
    }
}
#endif
