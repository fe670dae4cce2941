extension ImageHeader {
    /// Reads a PNG's size from IHDR and its orientation from an eXIf chunk placed before the image data.
    ///
    /// Because eXIf may appear anywhere before the first IDAT, the reader walks the chunk headers up to
    /// there; a prefix that stops earlier is `.truncated`.
    static func parsePNG(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageHeader {
        var offset = 8  // after the signature
        // Apple's optimised PNGs put a CgBI chunk before IHDR.
        if bytes.matches("CgBI", at: offset + 4) {
            offset += try chunkLength(bytes, at: offset) + 12
        }
        guard try bytes.fourCC(at: offset + 4) == "IHDR" else { throw bytes.corrupt("first chunk is not IHDR") }
        guard try bytes.uint32BE(at: offset) == 13 else { throw bytes.corrupt("IHDR is not 13 bytes long") }
        let width = try bytes.uint32BE(at: offset + 8)
        let height = try bytes.uint32BE(at: offset + 12)
        // Check the size before reading on, so a corrupt IHDR is reported as such right away.
        _ = try validated(bytes, width: width, height: height)
        var orientation = ImageOrientation.up
        try walkPNGChunks(bytes, from: offset + 8 + 13 + 4) { type, offset, length throws(ImageDecodingError) in
            guard type == "eXIf" else { return true }
            orientation = exifOrientation(in: try bytes.window(at: offset + 8, length: length)) ?? .up
            return false
        }
        return try validated(bytes, width: width, height: height, orientation: orientation)
    }

    /// Walks a PNG's chunks from the one at `offset` up to the first IDAT or IEND, calling `visit` with
    /// each chunk's type, offset and data length, until `visit` returns false. Throws `.truncated`
    /// when the bytes end first and `.corrupt` for a length PNG does not allow.
    static func walkPNGChunks(
        _ bytes: HeaderBytes, from offset: Int, _ visit: (String, Int, Int) throws(ImageDecodingError) -> Bool
    ) throws(ImageDecodingError) {
        var offset = offset
        while true {
            let length = try chunkLength(bytes, at: offset)
            let type = try bytes.fourCC(at: offset + 4)
            guard type != "IDAT", type != "IEND", try visit(type, offset, length) else { return }
            offset += length + 12  // length, type, data, CRC
        }
    }

    /// A chunk's data length, which PNG limits to 2^31 - 1.
    private static func chunkLength(_ bytes: HeaderBytes, at offset: Int) throws(ImageDecodingError) -> Int {
        let length = try bytes.uint32BE(at: offset)
        guard length <= Int(Int32.max) else { throw bytes.corrupt("chunk length \(length) at byte \(offset)") }
        return length
    }

    /// Reads the size of a GIF87a or GIF89a file: its logical screen, grown to take in the first image
    /// where that reaches past it, as browsers (Wuffs) and Pillow show such a file. Encoders that write a
    /// screen of 0x0, or one smaller than the frames, are common on the web; clipped to the screen the
    /// picture lost what fell outside it.
    static func parseGIF(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageHeader {
        let screen = PixelSize(width: try bytes.uint16LE(at: 6), height: try bytes.uint16LE(at: 8))
        let size = try firstGIFImageEdges(bytes).map { screen.grown(toRight: $0.right, bottom: $0.bottom) } ?? screen
        return try validated(bytes, width: size.width, height: size.height)
    }

    /// The right and bottom edges on the screen of a GIF's first image; `nil` when a trailer or an
    /// unknown block comes first (the decoder then says what is wrong). Extensions before it are
    /// skipped sub-block by sub-block, as giflib reads them.
    private static func firstGIFImageEdges(_ bytes: HeaderBytes) throws(ImageDecodingError) -> (
        right: Int, bottom: Int
    )? {
        let flags = try bytes.byte(at: 10)
        // The global color table, when there is one: 2^(n+1) entries of 3 bytes.
        var offset = 13 + (flags & 0x80 != 0 ? 3 << (Int(flags & 0x07) + 1) : 0)
        while true {
            switch try bytes.byte(at: offset) {
            case 0x21:  // an extension: its label, then sub-blocks up to an empty one
                offset += 2
                while true {
                    let length = Int(try bytes.byte(at: offset))
                    offset += 1 + length
                    if length == 0 { break }
                }
            case 0x2C:  // the image descriptor: left, top, width, height
                let left = try bytes.uint16LE(at: offset + 1)
                let top = try bytes.uint16LE(at: offset + 3)
                return (left + (try bytes.uint16LE(at: offset + 5)), top + (try bytes.uint16LE(at: offset + 7)))
            default:
                return nil
            }
        }
    }

    /// Reads a BMP's size from a BITMAPCOREHEADER (12 bytes, unsigned 16-bit sizes) or from a
    /// BITMAPINFOHEADER and its later extensions (signed 32-bit sizes; a negative height means the
    /// rows are stored top-down).
    static func parseBMP(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageHeader {
        let headerSize = try bytes.uint32LE(at: 14)
        switch headerSize {
        case 12:
            return try validated(bytes, width: bytes.uint16LE(at: 18), height: bytes.uint16LE(at: 20))
        case 16, 40, 52, 56, 64, 108, 124:
            let width = try bytes.int32LE(at: 18)
            let height = try bytes.int32LE(at: 22)
            guard width > 0 else { throw bytes.corrupt("width \(width)") }
            // Int32.min has no positive counterpart in Int32, but these are Int already.
            return try validated(bytes, width: width, height: abs(height))
        default:
            throw bytes.corrupt("unknown bitmap header size \(headerSize)")
        }
    }
}

extension PixelSize {
    /// This size grown to reach `right` and `bottom` where they lie past it: a GIF's screen grown to take in
    /// its first image.
    func grown(toRight right: Int, bottom: Int) -> PixelSize {
        PixelSize(width: max(width, right), height: max(height, bottom))
    }
}
