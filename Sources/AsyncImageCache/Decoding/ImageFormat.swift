/// The container formats the header reader recognises.
public enum ImageFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// JPEG (JFIF or EXIF).
    case jpeg
    /// PNG.
    case png
    /// GIF (87a or 89a); the store decodes its first frame.
    case gif
    /// WebP in its RIFF container: lossy, lossless or extended; the store decodes its first frame.
    case webp
    /// Windows BMP; decoded on Apple platforms only (ImageIO).
    case bmp
    /// HEIF or HEIC: decoded by ImageIO on Apple platforms, by libheif on Linux.
    case heif
    /// AVIF: decoded by ImageIO on Apple platforms, by libheif on Linux.
    case avif

    /// The format's common name in upper case, e.g. `JPEG`.
    public var description: String { rawValue.uppercased() }
}
