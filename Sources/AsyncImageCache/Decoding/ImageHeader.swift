import Foundation

/// What an image's first bytes say about it, read without decoding any pixels.
public struct ImageHeader: Hashable, Sendable {
    /// The container format.
    public var format: ImageFormat
    /// The size of the stored pixels, before orientation is applied.
    public var storedSize: PixelSize
    /// How the stored pixels are turned upright.
    public var orientation: ImageOrientation

    /// Creates a header.
    public init(format: ImageFormat, storedSize: PixelSize, orientation: ImageOrientation = .up) {
        self.format = format
        self.storedSize = storedSize
        self.orientation = orientation
    }

    /// The size as displayed: ``storedSize`` with orientation applied.
    public var displaySize: PixelSize { orientation.displaySize(ofStored: storedSize) }

    /// Parses the header at the start of `data`.
    ///
    /// Throws ``ImageDecodingError/Reason/truncated`` when `data` ends before the header does, so a
    /// caller reading a file in pieces knows to read more.
    public static func parse(_ data: Data) throws(ImageDecodingError) -> ImageHeader {
        let bytes = HeaderBytes(data, format: nil)
        let format = try detectFormat(bytes)
        let claimed = bytes.claiming(format)
        switch format {
        case .jpeg: return try parseJPEG(claimed)
        case .png: return try parsePNG(claimed)
        case .gif: return try parseGIF(claimed)
        case .webp: return try parseWebP(claimed)
        case .bmp: return try parseBMP(claimed)
        case .heif, .avif: return try parseHEIF(claimed)
        }
    }

    /// The largest width or height the reader accepts; anything bigger is taken for corrupt data.
    static let maximumDimension = 1 << 30

    /// A header for `format` after checking that the size is plausible.
    static func validated(
        _ bytes: HeaderBytes, width: Int, height: Int, orientation: ImageOrientation = .up
    ) throws(ImageDecodingError) -> ImageHeader {
        guard width > 0, height > 0 else { throw bytes.corrupt("zero width or height (\(width)x\(height))") }
        guard width <= maximumDimension, height <= maximumDimension else {
            throw bytes.corrupt("implausible size \(width)x\(height)")
        }
        // Every reader runs on bytes that `claiming` gave a format; nil would mean no reader matched.
        guard let format = bytes.format else { throw ImageDecodingError(format: nil, reason: .unrecognizedFormat) }
        return ImageHeader(
            format: format, storedSize: PixelSize(width: width, height: height), orientation: orientation)
    }
}

extension ImageHeader {
    /// The leading bytes of each format; nil matches any byte. An ISO-BMFF file starts with its
    /// `ftyp` box, whose 32-bit size is small enough that its first two bytes are zero.
    private static let signatures: [(format: ImageFormat?, pattern: [UInt8?])] = [
        (.jpeg, [0xFF, 0xD8, 0xFF]),
        (.png, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
        (.gif, ascii("GIF87a")),
        (.gif, ascii("GIF89a")),
        (.webp, ascii("RIFF") + [nil, nil, nil, nil] + ascii("WEBP")),
        (.bmp, ascii("BM")),
        (nil, [0x00, 0x00, nil, nil] + ascii("ftyp")),
    ]

    private static func ascii(_ text: String) -> [UInt8?] { text.utf8.map { $0 } }

    /// The format whose signature `bytes` start with.
    ///
    /// Data that is still a prefix of some signature is `.truncated` (naming the format when only
    /// one fits), because the next piece of the file may complete it.
    static func detectFormat(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageFormat {
        for signature in signatures
        where bytes.count >= signature.pattern.count && bytes.isPrefix(of: signature.pattern) {
            if let format = signature.format { return format }
            return try isobmffFormat(bytes)
        }
        let candidates = Set(signatures.filter { bytes.isPrefix(of: $0.pattern) }.map(\.format))
        guard candidates.isEmpty else {
            let format = candidates.count == 1 ? candidates.first! : nil
            throw ImageDecodingError(format: format, reason: .truncated)
        }
        throw ImageDecodingError(format: nil, reason: .unrecognizedFormat)
    }
}
