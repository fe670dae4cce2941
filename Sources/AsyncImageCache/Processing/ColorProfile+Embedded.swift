#if canImport(CPNGSupport)
import CPNGSupport
#endif
import Foundation

extension ColorProfile {
    /// The profile embedded in `data`, a file of `format`, when it is one this type reads: a JPEG's
    /// `ICC_PROFILE` APP2 segments (joined in their order), a PNG's `iCCP` chunk, a WebP's `ICCP` chunk
    /// (where its `VP8X` flags announce it), a HEIF or AVIF primary image's `prof` or `rICC` colour
    /// information (or, with no ICC profile, its `nclx` colour description: see ``ImageDecoders/HEIF``);
    /// for a colour JPEG (three components) with no profile whose EXIF declares Adobe RGB, ``adobeRGB``.
    ///
    /// A gray profile counts only for a grayscale image (a JPEG of one component, a PNG of colour type 0
    /// or 4, a HEIF or AVIF image coded monochrome), as the ICC and PNG specifications have it: on a colour image it describes other samples,
    /// and is passed over as ImageIO and browsers pass it over. So is an RGB profile on a CMYK or YCCK JPEG
    /// (four components), which the decoder has already turned into sRGB.
    static func embedded(in data: Data, format: ImageFormat) -> ColorProfile? {
        #if canImport(CHEIF)
        if format == .heif || format == .avif {
            // libheif decodes a monochrome image to gray RGB, which a gray profile describes; a colour one it
            // does not.
            return ImageDecoders.HEIF.colorProfile(in: data, format: format).flatMap {
                $0.isGray ? (ImageHeader.heifIsMonochrome(in: data) ? $0 : nil) : $0
            }
        }
        #endif
        if format == .jpeg {
            let segments = jpegColorSegments(data)
            if let icc = segments.icc {
                // A CMYK or YCCK JPEG (four components) comes out of the decoder as sRGB already: an RGB
                // profile in it describes other samples (Chromium drops it; littleCMS builds no transform).
                return ColorProfile(iccData: icc).flatMap {
                    $0.isGray ? (segments.components == 1 ? $0 : nil) : (segments.components != 4 ? $0 : nil)
                }
            }
            // A camera's Adobe RGB JPEG often says so only in its EXIF, without a profile. The EXIF outlives
            // an editor's turning the photo CMYK or gray, whose samples are then no Adobe RGB: a CMYK JPEG
            // comes out of the decoder as sRGB already.
            return segments.exifDeclaresAdobeRGB && segments.components == 3 ? adobeRGB : nil
        }
        guard let profile = embeddedICCData(in: data, format: format).flatMap({ ColorProfile(iccData: $0) }) else {
            return nil
        }
        // libpng itself refuses an iCCP chunk whose colour space is not the PNG's; a WebP is never gray.
        return !profile.isGray || format == .png ? profile : nil
    }

    /// Adobe RGB (1998), from its published primaries, D65 white and 563/256 gamma: for JPEGs whose
    /// EXIF declares it (``ImageHeader/exifDeclaresAdobeRGB(in:)``).
    static let adobeRGB = ColorProfile(
        red: (0.64, 0.33), green: (0.21, 0.71), blue: (0.15, 0.06), white: (0.3127, 0.3290),
        curve: .gamma(563.0 / 256))

    /// The ICC bytes embedded in `data`; `nil` when there are none, or they are incomplete.
    static func embeddedICCData(in data: Data, format: ImageFormat, largest: Int = largestProfile) -> Data? {
        switch format {
        case .jpeg: return jpegColorSegments(data, largest: largest).icc
        case .webp: return data.withUnsafeBytes { webPICCData(UnsafeRawBufferPointer($0)) }
        case .png: return pngICCData(data)
        case .heif, .avif:
            #if canImport(CHEIF)
            return ImageDecoders.HEIF.iccProfile(in: data, format: format)
            #else
            return nil
            #endif
        default: return nil
        }
    }

    /// What a JPEG's segments before its first scan say about colour, in one walk: its ICC profile,
    /// gathered from the `ICC_PROFILE` APP2 segments (a profile over 64 KB spans several, each
    /// `ICC_PROFILE\0`, its number from 1 and the count; all must be there, once each, and one may hold
    /// no bytes of the profile, as libjpeg-turbo's `jpeg_read_icc_profile` allows), whether its
    /// first `Exif` APP1 segment declares Adobe RGB, and the component count of its frame header.
    /// Segments that break the walk give none of them.
    private static func jpegColorSegments(_ data: Data, largest: Int = largestProfile) -> (
        icc: Data?, exifDeclaresAdobeRGB: Bool, components: Int?
    ) {
        let bytes = HeaderBytes(data, format: .jpeg)
        guard bytes.matches([0xFF, 0xD8], at: 0) else { return (nil, false, nil) }
        let iccTag = Array("ICC_PROFILE".utf8) + [0]
        var chunks: [Int: HeaderBytes] = [:]
        var expected = 0
        var exif: HeaderBytes?
        var iccBroken = false
        var components: Int?
        do {
            try ImageHeader.walkJPEGSegments(bytes) { marker, offset, length throws(ImageDecodingError) in
                let payload = try bytes.window(at: offset + 2, length: length - 2)
                // The frame header: precision, height and width, then the component count.
                if ImageHeader.isStartOfFrame(marker), components == nil, payload.count >= 6 {
                    components = Int(try payload.byte(at: 5))
                }
                if marker == 0xE1, exif == nil, payload.matches(Array("Exif".utf8) + [0, 0], at: 0) {
                    exif = payload
                }
                guard marker == 0xE2, payload.count >= iccTag.count + 2, payload.matches(iccTag, at: 0) else {
                    return true
                }
                let number = Int(try payload.byte(at: iccTag.count))
                let count = Int(try payload.byte(at: iccTag.count + 1))
                guard !iccBroken, number >= 1, number <= count, expected == 0 || expected == count,
                    chunks[number] == nil
                else {
                    iccBroken = true
                    return true  // the EXIF and the frame header may still come
                }
                expected = count
                chunks[number] = try payload.window(at: iccTag.count + 2, length: payload.count - iccTag.count - 2)
                // Stop gathering past the size a profile is parsed at.
                iccBroken = chunks.values.reduce(0, { $0 + $1.count }) > largest
                return true
            }
        } catch {
            return (nil, false, nil)
        }
        let complete = !iccBroken && expected > 0 && chunks.count == expected
        let icc = complete ? Data((1...expected).flatMap { chunks[$0]!.bytes }) : nil
        return (icc, exif.map { ImageHeader.exifDeclaresAdobeRGB(in: $0) } ?? false, components)
    }

    /// The `ICCP` chunk of an extended file whose `VP8X` flags say it has a profile, among the chunks its
    /// RIFF size covers, as libwebp's demuxer (which browsers read WebP's profile through) finds it: a
    /// chunk the flags do not announce, one in a simple file (no `VP8X`) and one past the RIFF size are
    /// passed over, and the picture is taken for sRGB.
    private static func webPICCData(_ bytes: UnsafeRawBufferPointer) -> Data? {
        func uint32LE(at offset: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) } }
        guard bytes.count >= 30, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WEBP".utf8),
            bytes[12..<16].elementsEqual("VP8X".utf8), bytes[20] & 0x20 != 0
        else { return nil }
        // The RIFF size counts the bytes after itself; chunks beyond it belong to no one.
        let riffEnd = min(bytes.count, uint32LE(at: 4) + 8)
        var offset = 12
        while offset + 8 <= riffEnd {
            let size = uint32LE(at: offset + 4)
            let end = offset + 8 + size
            guard end <= riffEnd else { return nil }
            if bytes[offset..<(offset + 4)].elementsEqual("ICCP".utf8) {
                return size <= largestProfile ? Data(bytes[(offset + 8)..<end]) : nil
            }
            offset = end + (size & 1)  // chunks are padded to an even size
        }
        return nil
    }

    /// libpng inflates and checks the `iCCP` chunk.
    private static func pngICCData(_ data: Data) -> Data? {
        #if canImport(CPNGSupport)
        return data.withUnsafeBytes { raw -> Data? in
            let bytes = raw.bindMemory(to: UInt8.self)
            var profile: UnsafeMutablePointer<UInt8>?
            var length = 0
            guard cpng_read_icc_profile(bytes.baseAddress, bytes.count, &profile, &length) == 1, let profile else {
                return nil
            }
            defer { cpng_free(profile) }
            return Data(bytes: profile, count: length)
        }
        #else
        return nil
        #endif
    }
}

extension Bitmap {
    /// The bitmap with its colours, read in `profile`'s colour space, converted to sRGB; alpha unchanged.
    ///
    /// Each sample goes through its channel's tone curve (a table of 256), the 3x3 matrix into linear
    /// sRGB, a clamp to sRGB's gamut and sRGB's encoding (a table fine enough to need no interpolation).
    func convertedToSRGB(from profile: ColorProfile) -> Bitmap {
        // One table for the three curves: red's 256 entries, then green's, then blue's.
        let curves = profile.curves.flatMap { curve in (0...255).map { Float(curve.linear(Double($0) / 255)) } }
        let m = profile.toLinearSRGB.rows.flatMap { $0.map(Float.init) }
        let (m00, m01, m02, m10, m11, m12, m20, m21, m22) = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
        let scale = Float(SRGBCurve.encodingTable.count - 1)
        let converted = [UInt8](unsafeUninitializedCapacity: pixels.count) { output, initialized in
            SRGBCurve.encodingTable.withUnsafeBufferPointer { encodingTable in
                curves.withUnsafeBufferPointer { curveTable in
                    pixels.withUnsafeBufferPointer { sourceBuffer in
                        let (encoding, curve) = (encodingTable.baseAddress!, curveTable.baseAddress!)
                        let (source, target) = (sourceBuffer.baseAddress!, output.baseAddress!)
                        @inline(__always) func encode(_ linear: Float) -> UInt8 {
                            encoding[Int(min(max(linear, 0), 1) * scale + 0.5)]
                        }
                        for offset in stride(from: 0, to: sourceBuffer.count, by: 4) {
                            let r = curve[Int(source[offset])]
                            let g = curve[256 + Int(source[offset + 1])]
                            let b = curve[512 + Int(source[offset + 2])]
                            target[offset] = encode(m00 * r + m01 * g + m02 * b)
                            target[offset + 1] = encode(m10 * r + m11 * g + m12 * b)
                            target[offset + 2] = encode(m20 * r + m21 * g + m22 * b)
                            target[offset + 3] = source[offset + 3]
                        }
                    }
                }
            }
            initialized = pixels.count
        }
        return Bitmap(width: width, height: height, pixels: converted)
    }
}

extension Bitmap {
    /// Reads `data` as an ICC profile and, when it parses, converts a bitmap of every level with it (as a
    /// CMYK profile, a row of ink); then looks for an embedded profile in `data` as a JPEG, a PNG and a
    /// WebP (the fuzzer: none may crash or read outside its bytes, and a conversion keeps alpha, or
    /// makes it opaque from ink).
    @_spi(Fuzzing) public static func fuzzColorProfile(_ data: Data) {
        if let profile = ColorProfile(iccData: data) {
            var pixels: [UInt8] = []
            for level in 0..<256 { pixels += [UInt8(level), UInt8(255 - level), UInt8(level / 2), UInt8(level)] }
            let levels = Bitmap(width: 256, height: 1, pixels: pixels)
            let converted = levels.convertedToSRGB(from: profile)
            precondition(converted.alphaChannel == levels.alphaChannel, "a conversion changed alpha")
            _ = profile.isSRGB
        }
        if let cmyk = CMYKProfile(iccData: data) {
            var row = (0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 37) }
            row.withUnsafeMutableBufferPointer { cmyk.convert($0.baseAddress!, width: 256) }
            precondition(stride(from: 3, to: row.count, by: 4).allSatisfy { row[$0] == 255 }, "CMYK gave alpha")
        }
        for format in [ImageFormat.jpeg, .png, .webp] { _ = ColorProfile.embedded(in: data, format: format) }
    }
}
