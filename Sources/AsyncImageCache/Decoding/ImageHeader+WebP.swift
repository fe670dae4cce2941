extension ImageHeader {
    /// Reads a WebP's size from its first chunk: a VP8 key frame, a VP8L header or a VP8X canvas.
    ///
    /// A VP8X file that flags EXIF metadata is walked chunk by chunk to its EXIF chunk for the
    /// orientation. The format puts that chunk after the image data, so such a file reports
    /// `.truncated` until nearly all of it is present: the size is the one displayed, and an orientation
    /// still to come may turn it. The answer comes once the bytes settle the orientation, which a
    /// cut download may do before the chunk ends: when its orientation entry is there, or the tags of
    /// IFD0's entries without it (see ``exifOrientation(inPrefix:)``); an EXIF thumbnail or maker note
    /// after them changes nothing. The decoder gives an animation's frame 1 from such a cut file on the same
    /// condition, and a still image only whole (see `WebPFirstFrame`). An EXIF chunk that declares more
    /// bytes than the RIFF size leaves it is not whole however many bytes follow, and is ignored:
    /// libwebp decodes the picture before it and never reads it.
    static func parseWebP(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageHeader {
        let chunk = 12  // after "RIFF", the file size and "WEBP"
        let payload = chunk + 8
        switch try bytes.fourCC(at: chunk) {
        case "VP8 ":
            // A 3-byte frame tag (bit 0 clear on a key frame), the start code, then 14-bit sizes;
            // the top two bits of each are the upscaling hint.
            try bytes.require(payload, length: 10)
            guard try bytes.byte(at: payload) & 1 == 0 else { throw bytes.corrupt("VP8 frame is not a key frame") }
            guard bytes.matches([0x9D, 0x01, 0x2A], at: payload + 3) else { throw bytes.corrupt("no VP8 start code") }
            let width = try bytes.uint16LE(at: payload + 6) & 0x3FFF
            let height = try bytes.uint16LE(at: payload + 8) & 0x3FFF
            return try validated(bytes, width: width, height: height)
        case "VP8L":
            guard try bytes.byte(at: payload) == 0x2F else { throw bytes.corrupt("VP8L signature missing") }
            // Two 14-bit fields, width - 1 then height - 1, from the least significant bit up.
            let bits = try bytes.uint32LE(at: payload + 1)
            return try validated(bytes, width: (bits & 0x3FFF) + 1, height: ((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            let flags = try bytes.byte(at: payload)
            let width = try bytes.uint24LE(at: payload + 4) + 1
            let height = try bytes.uint24LE(at: payload + 7) + 1
            var orientation = ImageOrientation.up
            if flags & 0x08 != 0 {
                orientation = try webPExifOrientation(bytes, after: chunk) ?? .up
            }
            return try validated(bytes, width: width, height: height, orientation: orientation)
        case let other:
            throw bytes.corrupt("unknown first chunk '\(other)'")
        }
    }

    /// Walks the chunks after the VP8X chunk at `first` to the EXIF chunk; nil when there is none.
    private static func webPExifOrientation(
        _ bytes: HeaderBytes, after first: Int
    ) throws(ImageDecodingError) -> ImageOrientation? {
        // The RIFF size counts the bytes after itself; chunks beyond it belong to no one.
        let end = try bytes.uint32LE(at: 4) + 8
        var offset = first
        while offset + 8 <= end {
            let size = try bytes.uint32LE(at: offset + 4)
            if bytes.matches("EXIF", at: offset) {
                // Waiting for its end would wait forever, and the decoder (WebPDecode, which stops at the
                // RIFF size) gives the picture without it.
                guard size <= end - offset - 8 else { return nil }
                let present = min(size, bytes.count - offset - 8)
                let payload = try bytes.window(at: offset + 8, length: present)
                return present == size ? exifOrientation(in: payload) : try exifOrientation(inPrefix: payload)
            }
            // Chunk data is padded to an even length.
            offset += 8 + size + (size & 1)
        }
        return nil
    }
}
