@_spi(Fuzzing) import AsyncImageCache
import Foundation

/// The fuzz targets, one line each: a name (`FUZZ_TARGET`) and what one input goes through.
///
/// A decoder target parses the header first, as the store does, and only decodes inputs of its
/// format: a decoder is never handed bytes whose header did not parse. Adding a codec is one line
/// here (the `ImageDecoders.Default` dispatch picks it by the header's format).
enum FuzzTargets {
    static let all: [String: @Sendable (Data) -> Void] = [
        "header": { data in _ = try? ImageHeader.parse(data) },
        "jpeg": { data in decode(data, as: .jpeg) },
        "png": { data in decode(data, as: .png) },
        "webp": { data in decode(data, as: .webp) },
        "gif": { data in decode(data, as: .gif) },
        "heif": { data in
            decode(data, as: .heif)
            decode(data, as: .avif)
        },
        "resize": { data in resize(data) },
        "icc": { data in Bitmap.fuzzColorProfile(data) },
    ]

    /// The target named by the `FUZZ_TARGET` environment variable.
    static let selected: (@Sendable (Data) -> Void)? = ProcessInfo.processInfo.environment["FUZZ_TARGET"].flatMap {
        all[$0]
    }

    // Small enough that a hostile header claiming a huge image is refused at once and a run stays
    // quick; every codec fixture but the large EXIF photos fits.
    static let pixelBudget = 1024 * 1024

    /// Decodes as the store would: the full size, or (DCT scaling, for JPEG) 1/2 to 1/8 of it, the
    /// scale chosen by the last byte so the fuzzer can steer it.
    static func decode(_ data: Data, as format: ImageFormat) {
        guard let header = try? ImageHeader.parse(data), header.format == format else { return }
        let divisor = Int(data.last ?? 0) % 8 + 1
        let stored = header.storedSize
        let minimum =
            divisor == 1
            ? nil : PixelSize(width: max(1, stored.width / divisor), height: max(1, stored.height / divisor))
        let context = ImageDecodingContext(header: header, minimumSize: minimum, pixelBudget: pixelBudget)
        _ = try? ImageDecoders.Default().decode(data, context: context)
        #if os(Linux)
        if format == .jpeg {
            // The 1/8 scale's DC-only decoder, split between two threads at any size: it must
            // agree with itself on one thread, whatever the bytes. (Every input, not only those
            // whose last byte picks 1/8: that byte is EOI's in every seed.)
            _ = ImageDecoders.JPEG.fuzzDCDecodeAgreement(data)
        }
        if format == .webp {
            // A store decodes through libwebp's incremental decoder, a chunk at a time: it must give the
            // one call's pixels and errors. Inputs are smaller than a store's chunk, so the chunk size
            // comes from the input (1 to 512 bytes), stopping and resuming the decoder many times.
            let chunkSize = 1 + Int(data[data.index(data.startIndex, offsetBy: data.count / 2)]) * 2
            _ = ImageDecoders.WebP.fuzzChunkedAgreement(data, context: context, chunkSize: chunkSize)
        }
        if format == .png {
            // The row reader behind the row-by-row resize and the whole decode in a store (an interlaced file
            // pass by pass): the simplified API's pixels, and a resize to the scale the last byte picks (the
            // full size when it picks none, which the resize declines).
            _ = ImageDecoders.PNG.fuzzRowReaderAgreement(data, context: context, resizedTo: minimum ?? stored)
        }
        #endif
    }

    /// A resize whose sizes (up to 256x64), opacity and pixels all come from the input: every
    /// kernel level must give the same bytes, and none may read or write outside its buffers.
    static func resize(_ data: Data) {
        let bytes = [UInt8](data)
        guard bytes.count >= 6 else { return }
        let source = PixelSize(width: 1 + Int(bytes[0]), height: 1 + Int(bytes[1]) % 64)
        let target = PixelSize(width: 1 + Int(bytes[2]), height: 1 + Int(bytes[3]) % 64)
        let opaque = bytes[4] & 1 == 0
        let content = bytes[5...]
        var pixels = [UInt8](repeating: 0, count: source.width * source.height * 4)
        for index in pixels.indices {
            pixels[index] =
                opaque && index % 4 == 3 ? 255 : content[content.startIndex + index % content.count]
        }
        Bitmap(width: source.width, height: source.height, pixels: pixels).fuzzResizeAgreement(to: target)
    }
}
