extension ImageHeader {
    /// The EXIF orientation tag.
    private static let orientationTag: UInt64 = 0x0112
    /// The TIFF field type SHORT (an unsigned 16-bit value), the type EXIF gives the orientation.
    private static let shortType: UInt64 = 3
    /// The TIFF field type LONG (an unsigned 32-bit value), the type of directory offsets.
    private static let longType: UInt64 = 4
    /// The TIFF field type IFD, which some writers give directory offsets instead of LONG.
    private static let directoryType: UInt64 = 13

    /// The orientation stored in an EXIF payload, or nil when it has none.
    ///
    /// `payload` is a TIFF structure (byte order `II` or `MM`, the number 42, then the offset of
    /// IFD0), optionally preceded by the `Exif\0\0` marker that JPEG uses and that some PNG and WebP
    /// writers copy. The orientation entry counts only as one SHORT, its count 1, as the specification
    /// has it. Malformed metadata is ignored rather than reported: a picture with broken EXIF
    /// still has a perfectly good size, and every viewer shows it unrotated.
    static func exifOrientation(in payload: HeaderBytes) -> ImageOrientation? {
        guard let (tiff, bigEndian, ifd0) = tiffStructure(in: payload),
            let value = try? directoryValue(orientationTag, in: ifd0, tiff, bigEndian: bigEndian, short: true)
        else { return nil }
        return ImageOrientation(exifValue: Int(value))
    }

    /// The orientation in the first bytes of an EXIF payload that goes on past them, when those bytes settle
    /// it: the orientation entry is among them, or the tags of all IFD0's entries are and none is the
    /// orientation (`nil`). Throws
    /// ``ImageDecodingError/Reason/truncated`` when the answer lies in the bytes still to come, from the TIFF
    /// header (its first 14 bytes, with or without the `Exif\0\0` marker) to the orientation's value. The
    /// answer is the one ``exifOrientation(in:)`` gives for the whole payload; reads that would go past it
    /// (an offset out of bounds) are `.truncated` here until the payload is whole, and then say nothing.
    static func exifOrientation(inPrefix payload: HeaderBytes) throws(ImageDecodingError) -> ImageOrientation? {
        try payload.require(0, length: 14)
        guard let (tiff, bigEndian, ifd0) = tiffStructure(in: payload),
            let value = try directoryValue(orientationTag, in: ifd0, tiff, bigEndian: bigEndian, short: true)
        else { return nil }
        return ImageOrientation(exifValue: Int(value))
    }

    /// Whether an EXIF payload says the picture is Adobe RGB (1998) without carrying its profile: the
    /// DCF convention cameras follow in their Adobe RGB mode (ColorSpace 0xFFFF, uncalibrated, with
    /// InteroperabilityIndex `R03` in the interoperability directory), or the ColorSpace value 2 that
    /// some writers use instead. ImageIO reads both as Adobe RGB. Malformed metadata says no.
    static func exifDeclaresAdobeRGB(in payload: HeaderBytes) -> Bool {
        guard let (tiff, bigEndian, ifd0) = tiffStructure(in: payload),
            let exif = try? directoryValue(0x8769, in: ifd0, tiff, bigEndian: bigEndian),
            let colorSpace = try? directoryValue(0xA001, in: exif, tiff, bigEndian: bigEndian, short: true)
        else { return false }
        if colorSpace == 2 { return true }
        guard colorSpace == 0xFFFF,
            let interoperability = try? directoryValue(0xA005, in: exif, tiff, bigEndian: bigEndian),
            let entry = try? directoryEntry(0x0001, in: interoperability, tiff, bigEndian: bigEndian)
        else { return false }
        // An ASCII value of up to four bytes ("R03" and its terminator) sits in the value field itself.
        return tiff.matches("R03", at: entry + 8)
    }

    /// The TIFF structure of an EXIF payload (after its `Exif\0\0` marker, when it has one), its byte
    /// order and the offset of IFD0; `nil` when the payload is not one.
    private static func tiffStructure(in payload: HeaderBytes) -> (HeaderBytes, bigEndian: Bool, ifd0: Int)? {
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
        guard (try? tiff.unsigned(at: 2, length: 2, bigEndian: bigEndian)) == 42,
            let ifd0 = try? tiff.unsigned(at: 4, length: 4, bigEndian: bigEndian)
        else { return nil }
        return (tiff, bigEndian, Int(ifd0))
    }

    /// The offset of the 12-byte entry for `tag` in the directory at `directory`; `nil` when absent.
    private static func directoryEntry(
        _ tag: UInt64, in directory: Int, _ tiff: HeaderBytes, bigEndian: Bool
    ) throws(ImageDecodingError) -> Int? {
        let entryCount = Int(try tiff.unsigned(at: directory, length: 2, bigEndian: bigEndian))
        // At most 65535 entries of 12 bytes, each read bounds-checked: the loop ends on its own.
        for index in 0..<entryCount {
            let entry = directory + 2 + index * 12
            if try tiff.unsigned(at: entry, length: 2, bigEndian: bigEndian) == tag { return entry }
        }
        return nil
    }

    /// The value of the entry for `tag` holding one SHORT (`short`) or one LONG, such as the offset of
    /// another directory; `nil` when absent, of another type or of another count than 1.
    ///
    /// Every tag read here (Orientation, ColorSpace and the offsets of the Exif and interoperability
    /// directories) has one value by TIFF and EXIF, and browsers read the orientation only so (Chrome, Safari
    /// and Firefox ask for count 1): another count leaves the value field empty, or makes it the offset of
    /// several values.
    private static func directoryValue(
        _ tag: UInt64, in directory: Int, _ tiff: HeaderBytes, bigEndian: Bool, short: Bool = false
    ) throws(ImageDecodingError) -> Int? {
        guard let entry = try directoryEntry(tag, in: directory, tiff, bigEndian: bigEndian) else { return nil }
        let type = try tiff.unsigned(at: entry + 2, length: 2, bigEndian: bigEndian)
        guard short ? type == shortType : type == longType || type == directoryType,
            try tiff.unsigned(at: entry + 4, length: 4, bigEndian: bigEndian) == 1
        else { return nil }
        return Int(try tiff.unsigned(at: entry + 8, length: short ? 2 : 4, bigEndian: bigEndian))
    }
}
