/// Why bytes could not be turned into pixels: the format, when known, and the reason.
public struct ImageDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Equatable {
        /// The bytes do not start with the signature of any supported format.
        case unrecognizedFormat
        /// The format is recognised but this build has no decoder for it (e.g. BMP, whose header is read
        /// for its size but which no decoder here handles).
        case unsupportedFormat
        /// A feature of the file that the decoder does not handle, such as 12-bit JPEG, a JPEG side over
        /// libjpeg-turbo's 65500 pixels or a JPEG of more than 500 scans; or, from an encoder, a bitmap
        /// larger than the format can hold.
        case unsupportedFeature(String)
        /// The data ends before the image does.
        case truncated
        /// The data is malformed; the text is the codec's own message.
        case corrupt(String)
        /// The decoded bitmap would exceed the configured pixel budget; refused before allocating.
        case pixelBudgetExceeded(pixels: Int, budget: Int)
        /// The decode stopped early because nobody wants the image any more (see
        /// ``ImageDecodingContext/isCancelled``); nothing is wrong with the data.
        case cancelled

        /// Whether bytes that once decoded could fail this way after damage: cut short, corrupt or
        /// unrecognisable, as opposed to a limit or a feature, which would fail the same way again.
        var suggestsDamage: Bool {
            switch self {
            case .truncated, .corrupt, .unrecognizedFormat: return true
            case .unsupportedFormat, .unsupportedFeature, .pixelBudgetExceeded, .cancelled: return false
            }
        }
    }

    /// The format the bytes claimed to be, or `nil` when no signature matched.
    public var format: ImageFormat?
    /// What went wrong.
    public var reason: Reason

    /// Creates an error for `format` with `reason`.
    public init(format: ImageFormat?, reason: Reason) {
        self.format = format
        self.reason = reason
    }

    /// One line naming the format and the reason, e.g. `PNG: corrupt data (IHDR: CRC error)`.
    public var description: String {
        let name = format?.description ?? "image"
        switch reason {
        case .unrecognizedFormat: return "not a recognised image format"
        case .unsupportedFormat: return "\(name): no decoder for this format on this platform"
        case .unsupportedFeature(let feature): return "\(name): unsupported feature (\(feature))"
        case .truncated: return "\(name): data ends before the image does"
        case .corrupt(let message): return "\(name): corrupt data (\(message))"
        case .pixelBudgetExceeded(let pixels, let budget):
            return "\(name): \(pixels) pixels exceed the decoding budget of \(budget)"
        case .cancelled: return "\(name): decoding stopped, the load was cancelled"
        }
    }
}
