import Foundation

@testable import AsyncImageCache

/// Sizes read straight from the bytes by test-local parsers, independent of libjpeg and libpng, so a
/// decoder's output size is checked against the file rather than against itself.
enum StoredSize {
    /// The size in the first SOFn segment of a JPEG (`FF Cn, length, precision, height, width`).
    ///
    /// Checked against `file(1)` for the corpus: testorig.jpg 227x149, non-interleaved-mcu.jpg 64x16,
    /// video-001*.jpeg 150x103, monkey12.jpg 149x227.
    static func jpeg(_ data: Data) -> PixelSize? {
        let bytes = [UInt8](data)
        var offset = 2
        while offset + 4 <= bytes.count {
            guard bytes[offset] == 0xFF else { return nil }
            let marker = bytes[offset + 1]
            if marker == 0xFF {
                offset += 1  // fill byte
                continue
            }
            if marker == 0x01 || (0xD0...0xD8).contains(marker) {
                offset += 2  // markers without a length
                continue
            }
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            // C4 (DHT), C8 (JPG) and CC (DAC) share the range but are not frames.
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard offset + 9 <= bytes.count else { return nil }
                let height = Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6])
                let width = Int(bytes[offset + 7]) << 8 | Int(bytes[offset + 8])
                return PixelSize(width: width, height: height)
            }
            offset += 2 + length
        }
        return nil
    }

    /// The offset of the first SOFn marker of a JPEG, for tests that rewrite the declared size.
    static func jpegFrameOffset(_ data: Data) -> Int? {
        let bytes = [UInt8](data)
        var offset = 2
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF {
            let marker = bytes[offset + 1]
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) { return offset }
            offset += 2 + (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
        }
        return nil
    }

    /// The size in a PNG's IHDR chunk, which the format requires to come first (bytes 16..<24).
    static func png(_ data: Data) -> PixelSize? {
        let bytes = [UInt8](data)
        guard bytes.count >= 24, bytes[12..<16].elementsEqual("IHDR".utf8) else { return nil }
        func bigEndian(_ start: Int) -> Int { bytes[start..<start + 4].reduce(0) { $0 << 8 | Int($1) } }
        return PixelSize(width: bigEndian(16), height: bigEndian(20))
    }
}

/// A decoding context whose header deliberately claims 1x1: decoders must take the size from the data.
func decodingContext(
    _ format: ImageFormat,
    minimumSize: PixelSize? = nil,
    pixelBudget: Int = ImageDecodingContext.defaultPixelBudget
) -> ImageDecodingContext {
    ImageDecodingContext(
        header: ImageHeader(format: format, storedSize: PixelSize(width: 1, height: 1)),
        minimumSize: minimumSize,
        pixelBudget: pixelBudget
    )
}

/// The error `body` throws, or `nil` when it returns.
func decodingError(_ body: () throws(ImageDecodingError) -> Bitmap) -> ImageDecodingError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// A small deterministic generator (SplitMix64), so "random" inputs are the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// `count` bytes from the generator.
    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }

    /// `count` copies of `data`, each with one to four of its bytes from `offset` on replaced by random ones.
    mutating func mutations(of data: Data, count: Int, from offset: Int) -> [Data] {
        (0..<count).map { _ in
            var copy = data
            for _ in 0..<Int.random(in: 1...4, using: &self) {
                copy[Int.random(in: offset..<data.count, using: &self)] = UInt8.random(in: 0...255, using: &self)
            }
            return copy
        }
    }
}

extension Bitmap {
    /// A bitmap whose pixel at (x, y) is `color(x, y)`.
    static func drawing(width: Int, height: Int, _ color: (Int, Int) -> (UInt8, UInt8, UInt8, UInt8)) -> Bitmap {
        var pixels = [UInt8]()
        pixels.reserveCapacity(width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let (red, green, blue, alpha) = color(x, y)
                pixels += [red, green, blue, alpha]
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// The mean absolute difference of the red, green and blue samples of two bitmaps of the same size, over
    /// every `pixelStride`th pixel (row after row; a stride prime to the width samples every column).
    func meanColorDifference(from other: Bitmap, pixelStride: Int = 1) -> Double {
        precondition(pixelSize == other.pixelSize)
        // Through buffers and unrolled: a full-size photo has millions of samples and tests run unoptimised.
        let (total, count) = pixels.withUnsafeBufferPointer { pixels in
            other.pixels.withUnsafeBufferPointer { otherPixels in
                var (total, count) = (0, 0)
                for offset in stride(from: 0, to: pixels.count, by: 4 * pixelStride) {
                    total += abs(Int(pixels[offset]) - Int(otherPixels[offset]))
                    total += abs(Int(pixels[offset + 1]) - Int(otherPixels[offset + 1]))
                    total += abs(Int(pixels[offset + 2]) - Int(otherPixels[offset + 2]))
                    count += 3
                }
                return (total, count)
            }
        }
        return Double(total) / Double(count)
    }

    /// Whether every pixel has equal red, green and blue.
    var isGray: Bool {
        for offset in stride(from: 0, to: pixels.count, by: 4) {
            let red = pixels[offset]
            if pixels[offset + 1] != red || pixels[offset + 2] != red { return false }
        }
        return true
    }

    /// The bitmap with its sRGB-encoded color samples converted to linear light (alpha kept).
    func linearized() -> Bitmap {
        mappingColorSamples { sample in
            let encoded = Double(sample) / 255
            let linear = encoded <= 0.04045 ? encoded / 12.92 : pow((encoded + 0.055) / 1.055, 2.4)
            return UInt8((linear * 255).rounded())
        }
    }

    /// The bitmap with every color sample replaced by 255 minus it (alpha kept).
    func inverted() -> Bitmap { mappingColorSamples { 255 - $0 } }

    private func mappingColorSamples(_ transform: (UInt8) -> UInt8) -> Bitmap {
        var mapped = pixels
        for index in mapped.indices where index % 4 != 3 { mapped[index] = transform(mapped[index]) }
        return Bitmap(width: width, height: height, pixels: mapped)
    }

    /// The alpha sample of every pixel, in order.
    var alphaValues: [UInt8] { stride(from: 3, to: pixels.count, by: 4).map { pixels[$0] } }

    /// The largest difference between two samples at the same place in two bitmaps of the same size,
    /// ignoring the (invisible) color of pixels that are fully transparent in both.
    func largestVisibleDifference(from other: Bitmap) -> Int {
        precondition(pixelSize == other.pixelSize)
        var largest = 0
        for offset in stride(from: 0, to: pixels.count, by: 4) {
            let channels = pixels[offset + 3] == 0 && other.pixels[offset + 3] == 0 ? 3..<4 : 0..<4
            for index in channels.map({ offset + $0 }) {
                largest = max(largest, abs(Int(pixels[index]) - Int(other.pixels[index])))
            }
        }
        return largest
    }
}
