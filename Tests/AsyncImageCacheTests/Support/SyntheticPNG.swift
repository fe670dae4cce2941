import Foundation

/// 16-bit PNGs written byte by byte (deflate's stored blocks, no compression), for what PngSuite
/// lacks: its 16-bit files all carry a gAMA chunk of 1.0, while most 16-bit files in the wild carry
/// no colour chunk at all.
enum SyntheticPNG {
    /// A 16-bit gray (`channels` 1), gray and alpha (2), RGB (3) or RGBA (4) PNG whose samples
    /// `sample(x, y, channel)` gives (alpha last), sequential or Adam7-interlaced, with `chunks` (type and
    /// content) between IHDR and IDAT.
    static func sixteenBit(
        width: Int, height: Int, channels: Int, interlaced: Bool, chunks: [(String, [UInt8])] = [],
        sample: (Int, Int, Int) -> UInt16
    ) -> Data {
        // The PNG colour type of each channel count.
        let colorTypes: [Int: UInt8] = [1: 0, 2: 4, 3: 2, 4: 6]
        let colorType = colorTypes[channels]!
        var ihdr = ByteWriter()
        ihdr.uint32(width, bigEndian: true)
        ihdr.uint32(height, bigEndian: true)
        ihdr.append([16, colorType, 0, 0, interlaced ? 1 : 0])
        var scanlines: [UInt8] = []
        // Adam7's passes as (first column, first row, column step, row step); a sequential file is one pass.
        let passes =
            interlaced
            ? [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
            : [(0, 0, 1, 1)]
        for (firstColumn, firstRow, columnStep, rowStep) in passes {
            let columns = Array(stride(from: firstColumn, to: width, by: columnStep))
            guard !columns.isEmpty else { continue }  // an empty pass has no rows at all
            for y in stride(from: firstRow, to: height, by: rowStep) {
                scanlines.append(0)  // filter type None
                for x in columns {
                    for channel in 0..<channels {
                        let value = sample(x, y, channel)
                        scanlines += [UInt8(value >> 8), UInt8(value & 0xFF)]
                    }
                }
            }
        }
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        bytes += SyntheticHeaders.pngChunk("IHDR", ihdr.bytes)
        for (type, content) in chunks { bytes += SyntheticHeaders.pngChunk(type, content) }
        bytes += SyntheticHeaders.pngChunk("IDAT", storedZlib(scanlines))
        bytes += SyntheticHeaders.pngChunk("IEND", [])
        return Data(bytes)
    }

    /// A gAMA chunk's content for `gamma` (1.0 is linear, 1/2.2 about sRGB).
    static func gamma(_ gamma: Double) -> (String, [UInt8]) {
        ("gAMA", ByteWriter.build { $0.uint32(Int((gamma * 100_000).rounded()), bigEndian: true) })
    }

    /// `bytes` as a zlib stream of stored deflate blocks, with its Adler-32.
    static func storedZlib(_ bytes: [UInt8]) -> [UInt8] {
        ByteWriter.build { stream in
            stream.append([0x78, 0x01])
            var start = 0
            repeat {
                let count = min(65_535, bytes.count - start)
                let isLast = start + count == bytes.count
                stream.append([isLast ? 1 : 0])
                stream.uint16(count, bigEndian: false)
                stream.uint16(~count & 0xFFFF, bigEndian: false)
                stream.append(Array(bytes[start..<(start + count)]))
                start += count
            } while start < bytes.count
            var (low, high) = (UInt32(1), UInt32(0))
            for byte in bytes {
                low = (low + UInt32(byte)) % 65_521
                high = (high + low) % 65_521
            }
            stream.uint32(Int(high << 16 | low), bigEndian: true)
        }
    }

    /// `data` with every chunk of `type` left out (the others keep their CRCs).
    static func removingChunks(_ type: String, from data: Data) -> Data {
        let bytes = [UInt8](data)
        var kept = Array(bytes[0..<8])
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            let end = min(bytes.count, offset + 12 + length)
            if String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self) != type {
                kept += bytes[offset..<end]
            }
            offset = end
        }
        return Data(kept)
    }
}
