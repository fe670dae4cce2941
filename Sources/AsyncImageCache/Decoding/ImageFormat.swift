/// The container formats the header reader recognises.
public enum ImageFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    case jpeg, png, gif, webp, bmp, heif, avif

    /// The format's common name in upper case, e.g. `JPEG`.
    public var description: String { rawValue.uppercased() }
}
