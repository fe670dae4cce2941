extension ImageHeader {
    /// The EXIF orientation tag.
    private static let orientationTag: UInt64 = 0x0112
    /// The TIFF field type SHORT (an unsigned 16-bit value), the type EXIF gives the orientation.
    private static let shortType: UInt64 = 3

    /// The orientation stored in an EXIF payload, or nil when it has none.
    ///
    /// `payload` is a TIFF structure (byte order `II` or `MM`, the number 42, then the offset of
    /// IFD0), optionally preceded by the `Exif\0\0` marker that JPEG uses and that some PNG and WebP
    /// writers copy. Malformed metadata is ignored rather than reported: a picture with broken EXIF
    /// still has a perfectly good size, and every viewer shows it unrotated.
    static func exifOrientation(in payload: HeaderBytes) -> ImageOrientation? {
        var tiff = payload
        if payload.matches(Array("Exif".utf8) + [0, 0], at: 0) {
            guard let rest = try? payload.window(at: 6, length: payload.count - 6) else { return nil }
            tiff = rest
        }
        let bigEndian: Bool
        if tiff.matches("MM", at: 0) {
            bigEndian = true
        } else if tiff.matches("II", at: 0) {
            bigEndian = false
        } else {
            return nil
        }
        return try? orientation(inTIFF: tiff, bigEndian: bigEndian)
    }

    private static func orientation(
        inTIFF tiff: HeaderBytes, bigEndian: Bool
    ) throws(ImageDecodingError) -> ImageOrientation? {
        guard try tiff.unsigned(at: 2, length: 2, bigEndian: bigEndian) == 42 else { return nil }
        let directory = Int(try tiff.unsigned(at: 4, length: 4, bigEndian: bigEndian))
        let entryCount = Int(try tiff.unsigned(at: directory, length: 2, bigEndian: bigEndian))
        // At most 65535 entries of 12 bytes, each read bounds-checked: the loop ends on its own.
        for index in 0..<entryCount {
            let entry = directory + 2 + index * 12
            guard try tiff.unsigned(at: entry, length: 2, bigEndian: bigEndian) == orientationTag else { continue }
            guard try tiff.unsigned(at: entry + 2, length: 2, bigEndian: bigEndian) == shortType else { return nil }
            // A single SHORT sits left-aligned in the 4-byte value field, in the file's byte order.
            let value = try tiff.unsigned(at: entry + 8, length: 2, bigEndian: bigEndian)
            return ImageOrientation(exifValue: Int(value))
        }
        return nil
    }
}
