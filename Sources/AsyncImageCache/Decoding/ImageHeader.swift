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
        // PLACEHOLDER: the portable header reader is being written (Decoding/ImageHeaderParser*.swift).
        throw ImageDecodingError(format: nil, reason: .unrecognizedFormat)
    }
}
