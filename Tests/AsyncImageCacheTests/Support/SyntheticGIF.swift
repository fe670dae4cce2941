import Foundation

/// Small GIFs written byte by byte, for the cases the fixtures do not cover (local color tables, frames that
/// reach past the screen, missing color tables, absurd sizes).
///
/// The image data is valid LZW that compresses nothing: every pixel is its own code, and a clear code follows
/// every `2^minimumCodeSize - 2` pixels, before the decoder's code table would outgrow the first code width.
/// Pillow 13 decodes files made this way to the pixels they were made from (checked by hand while writing it).
enum SyntheticGIF {
    typealias Color = (red: UInt8, green: UInt8, blue: UInt8)

    struct Frame {
        var left = 0
        var top = 0
        var width: Int
        var height: Int
        /// Color indices, row by row from the top, in display order even when `interlaced`.
        var indices: [UInt8]
        var localColors: [Color]?
        var interlaced = false
        /// Written as a Graphics Control Extension before the frame when set.
        var transparentIndex: UInt8?
    }

    /// A GIF89a file with a logical screen of `width` x `height`, an optional global color table and `frames`.
    /// Color tables shorter than a power of two are padded with black.
    static func make(width: Int, height: Int, globalColors: [Color]?, frames: [Frame]) -> Data {
        var bytes = Array("GIF89a".utf8)
        bytes += littleEndian16(width) + littleEndian16(height)
        bytes += [globalColors.map { 0x80 | tableSizeBits($0.count) } ?? 0, 0, 0]
        if let globalColors { bytes += colorTable(globalColors) }
        for frame in frames {
            if let transparent = frame.transparentIndex {
                bytes += [0x21, 0xF9, 4, 0x01, 0, 0, transparent, 0]
            }
            bytes += [0x2C] + littleEndian16(frame.left) + littleEndian16(frame.top)
            bytes += littleEndian16(frame.width) + littleEndian16(frame.height)
            var flags: UInt8 = frame.interlaced ? 0x40 : 0
            if let local = frame.localColors { flags |= 0x80 | tableSizeBits(local.count) }
            bytes.append(flags)
            if let local = frame.localColors { bytes += colorTable(local) }
            bytes += imageData(storedIndices(frame))
        }
        return Data(bytes + [0x3B])
    }

    /// The indices in the order the file stores the rows: for interlaced frames the four passes of the GIF
    /// specification (appendix E): rows 0, 8, 16...; then 4, 12...; then 2, 6, 10...; then 1, 3, 5...
    private static func storedIndices(_ frame: Frame) -> [UInt8] {
        guard frame.interlaced else { return frame.indices }
        var rows: [Int] = []
        var pass = 0
        while pass < 4 {
            let first = [0, 4, 2, 1][pass]
            let step = [8, 8, 4, 2][pass]
            var row = first
            while row < frame.height {
                rows.append(row)
                row += step
            }
            pass += 1
        }
        return rows.flatMap { frame.indices[$0 * frame.width..<($0 + 1) * frame.width] }
    }

    /// The LZW minimum code size byte, the codes in sub-blocks of at most 255 bytes, and the block terminator.
    private static func imageData(_ indices: [UInt8]) -> [UInt8] {
        let minimumCodeSize = 8
        let clear = 1 << minimumCodeSize
        var codes = [clear]
        for (count, index) in indices.enumerated() {
            if count > 0 && count % (clear - 2) == 0 { codes.append(clear) }
            codes.append(Int(index))
        }
        codes.append(clear + 1)  // end of information
        var packed: [UInt8] = []
        var accumulator = 0
        var bitCount = 0
        for code in codes {
            accumulator |= code << bitCount
            bitCount += minimumCodeSize + 1
            while bitCount >= 8 {
                packed.append(UInt8(accumulator & 0xFF))
                accumulator >>= 8
                bitCount -= 8
            }
        }
        if bitCount > 0 { packed.append(UInt8(accumulator)) }
        var bytes: [UInt8] = [UInt8(minimumCodeSize)]
        for start in stride(from: 0, to: packed.count, by: 255) {
            let block = packed[start..<min(start + 255, packed.count)]
            bytes += [UInt8(block.count)] + block
        }
        return bytes + [0]
    }

    /// The 3-bit size field of a color table with at least `count` entries: the table has `2^(field + 1)`.
    private static func tableSizeBits(_ count: Int) -> UInt8 {
        var bits: UInt8 = 0
        while 2 << Int(bits) < count { bits += 1 }
        return bits
    }

    private static func colorTable(_ colors: [Color]) -> [UInt8] {
        let size = 2 << Int(tableSizeBits(colors.count))
        return (0..<size).flatMap {
            $0 < colors.count ? [colors[$0].red, colors[$0].green, colors[$0].blue] : [0, 0, 0]
        }
    }

    private static func littleEndian16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
}
