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

    /// Reads the logical screen size of a GIF87a or GIF89a file.
    static func parseGIF(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageHeader {
        try validated(bytes, width: bytes.uint16LE(at: 6), height: bytes.uint16LE(at: 8))
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
