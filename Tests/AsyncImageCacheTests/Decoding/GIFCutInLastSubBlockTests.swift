#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A GIF cut inside the last data sub-block of its first frame: the codes before the cut can give every
/// pixel (the LZW end code comes after them), and then the frame is whole; when they do not, it is
/// `.truncated`. Which is which is worked out here by an LZW reader of the test's own, independent of giflib.
@Suite("GIF cut inside its last data sub-block")
struct GIFCutInLastSubBlockTests {
    let decoder = ImageDecoders.GIF()

    /// The single-frame files of `GIFMissingEndTests`, and the first frame of an animation.
    static let files = [
        "video-001.gif", "video-001.interlaced.gif", "video-001.5bpp.gif", "triangle-001.gif", "anim-gr.gif",
    ]

    func decode(_ data: Data) -> Result<Bitmap, ImageDecodingError> {
        Result { () throws(ImageDecodingError) in try decoder.decode(data, context: decodingContext(.gif)) }
    }

    /// The first image of a GIF as its block structure has it: its pixel count, its LZW minimum code size and
    /// where each of its data sub-blocks' bytes lie (after the length byte).
    struct FirstImage {
        var pixels = 0
        var minimumCodeSize = 0
        var subBlocks: [Range<Int>] = []

        init(_ data: Data) throws {
            let bytes = [UInt8](data)
            var offset = 13 + (bytes[10] & 0x80 != 0 ? 3 << (Int(bytes[10] & 0x07) + 1) : 0)
            func subBlocks() -> [Range<Int>] {
                var blocks: [Range<Int>] = []
                while bytes[offset] != 0 {
                    blocks.append(offset + 1..<offset + 1 + Int(bytes[offset]))
                    offset = blocks.last!.upperBound
                }
                offset += 1
                return blocks
            }
            while bytes[offset] == 0x21 {
                offset += 2
                _ = subBlocks()
            }
            try #require(bytes[offset] == 0x2C)
            let width = Int(bytes[offset + 5]) | Int(bytes[offset + 6]) << 8
            let height = Int(bytes[offset + 7]) | Int(bytes[offset + 8]) << 8
            pixels = width * height
            let flags = bytes[offset + 9]
            offset += 10 + (flags & 0x80 != 0 ? 3 << (Int(flags & 0x07) + 1) : 0)
            minimumCodeSize = Int(bytes[offset])
            offset += 1
            self.subBlocks = subBlocks()
        }

        /// How many bytes of the image's LZW data (its sub-blocks' bytes, joined) hold every code up to the
        /// one that gives its last pixel: codes of 3 to 12 bits, least significant bit first, a clear code
        /// resetting them and the table.
        func bytesHoldingEveryPixel(in data: Data) throws -> Int {
            let lzw = subBlocks.flatMap { [UInt8](data[$0]) }
            let clear = 1 << minimumCodeSize
            var codeSize = minimumCodeSize + 1
            var next = clear + 2
            // How many pixels each code gives; the roots give one.
            var lengths = [Int](repeating: 1, count: 4096)
            var previous: Int?
            var bit = 0
            var produced = 0
            while bit + codeSize <= lzw.count * 8 {
                let code = (0..<codeSize).reduce(0) { code, index in
                    code | Int(lzw[(bit + index) / 8] >> ((bit + index) % 8) & 1) << index
                }
                bit += codeSize
                if code == clear {
                    (codeSize, next, previous) = (minimumCodeSize + 1, clear + 2, nil)
                    continue
                }
                try #require(code != clear + 1, "the end code before the last pixel")
                if let previous {
                    // A code one past the table is the previous string and its own first pixel.
                    produced += code < next ? lengths[code] : lengths[previous] + 1
                    if next < 4096 {
                        lengths[next] = lengths[previous] + 1
                        next += 1
                        if next == 1 << codeSize && codeSize < 12 { codeSize += 1 }
                    }
                } else {
                    produced += 1
                }
                previous = code
                if produced >= pixels { return (bit + 7) / 8 }
            }
            throw NoLastPixel()
        }
    }

    /// The LZW data ran out before the image's last pixel.
    struct NoLastPixel: Error {}

    /// Before: every cut inside the last sub-block was `.truncated`, also where the bytes before it give every
    /// pixel (6 such cuts in the 5 files: giflib reads a sub-block whole before it decodes any of it).
    @Test(arguments: files)
    func aCutInsideTheLastSubBlockDecodesWhenItsCodesGiveEveryPixel(name: String) throws {
        let whole = try Fixtures.data("gif", name)
        let expected = try decode(whole).get()
        let image = try FirstImage(whole)
        let last = try #require(image.subBlocks.last)
        let needed = try image.bytesHoldingEveryPixel(in: whole)
        // LZW data bytes before the last sub-block's.
        let before = image.subBlocks.dropLast().reduce(0) { $0 + $1.count }
        try #require(needed > before, "the last pixel's code is in the last sub-block")
        var wholeCuts = 0
        var truncatedCuts = 0
        // Every cut from the first of its bytes to the last one, that last one left out.
        for end in last.lowerBound + 1..<last.upperBound {
            let cut = whole.prefix(end)
            if before + (end - last.lowerBound) >= needed {
                #expect(decode(cut) == .success(expected), "\(name) cut after \(end) bytes")
                wholeCuts += 1
            } else {
                #expect(
                    decode(cut) == .failure(ImageDecodingError(format: .gif, reason: .truncated)),
                    "\(name) cut after \(end) bytes")
                truncatedCuts += 1
            }
        }
        // Each file has cuts of both kinds: its last byte holds no pixel's code, its first bytes do.
        #expect(wholeCuts >= 1 && truncatedCuts >= 1, "\(name): \(wholeCuts) whole, \(truncatedCuts) truncated")
    }

    /// The LZW reader agrees with giflib on the whole files: the bytes it says hold every pixel are all there,
    /// and fewer than the data has (the end code follows).
    @Test(arguments: files)
    func theLZWReaderFindsTheLastPixelInsideTheData(name: String) throws {
        let whole = try Fixtures.data("gif", name)
        let image = try FirstImage(whole)
        let needed = try image.bytesHoldingEveryPixel(in: whole)
        #expect(needed <= image.subBlocks.reduce(0) { $0 + $1.count })
    }
}
#endif
