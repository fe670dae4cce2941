import Foundation

/// Why a load did not produce an image.
///
/// Every failure of ``ImageStore/image(for:)`` is one of these cases, and nothing is written to
/// either cache tier when a load fails.
public enum ImageLoadingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL's scheme is not `http`, `https`, `file` or `data`; or an HTTP redirect led to this URL,
    /// whose scheme is not `http` or `https` (a server never sends a load to a local file or elsewhere).
    case unsupportedURL(URL)
    /// A `data:` URL that is not well formed: the reason says what is wrong with it.
    case invalidDataURL(reason: String)
    /// A local file that is missing or cannot be read.
    case fileUnavailable(path: String, reason: String)
    /// The server answered with a status other than 2xx.
    case httpStatus(code: Int, url: URL)
    /// The request did not get a response, or more of its body, within the loader's `timeout`; or the
    /// download took longer in all than its `resourceTimeout` (``HTTPDataLoader/resourceTimeout``),
    /// however steadily its bytes arrived.
    case timedOut(URL)
    /// The body was larger than the configured response-size cap (``HTTPDataLoader/maximumResponseBytes``);
    /// the download was stopped early. Or a local file is larger than ``FileDataLoader/maximumBytes``:
    /// refused before it is read, or as soon as a file that grew passes the limit.
    case responseTooLarge(url: URL, byteLimit: Int)
    /// The connection closed before the announced `Content-Length` arrived; or a `206 Partial Content`
    /// answer held only part of the image, of `expectedBytes` in all.
    case truncatedResponse(url: URL, expectedBytes: Int, receivedBytes: Int)
    /// Any other transport failure, with the system's description of it.
    case network(url: URL, description: String)
    /// The bytes arrived but are not an image the store can decode.
    case decodingFailed(ImageDecodingError)
    /// The load was cancelled before it finished.
    case cancelled

    /// One line that names what failed and why.
    public var description: String {
        switch self {
        case .unsupportedURL(let url): "unsupported URL scheme: \(url.absoluteString.prefix(80))"
        case .invalidDataURL(let reason): "invalid data: URL: \(reason)"
        case .fileUnavailable(let path, let reason): "cannot read \(path): \(reason)"
        case .httpStatus(let code, let url): "HTTP \(code) for \(url.absoluteString)"
        case .timedOut(let url): "timed out loading \(url.absoluteString)"
        case .responseTooLarge(let url, let limit): "response for \(url.absoluteString) exceeds \(limit) bytes"
        case .truncatedResponse(let url, let expected, let received):
            "response for \(url.absoluteString) truncated: \(received) of \(expected) bytes"
        case .network(let url, let description): "network error loading \(url.absoluteString): \(description)"
        case .decodingFailed(let error): error.description
        case .cancelled: "cancelled"
        }
    }
}

extension ImageLoadingError {
    /// This error as the load of `url` reports it: a URL it names that is `url` written another way (with
    /// the same ``URL/cacheKey``: the scheme in another case) becomes `url` as its caller wrote it. Loads
    /// of one key share one run, whose errors name the URL of the load that started it.
    func naming(_ url: URL) -> ImageLoadingError {
        func asked(_ named: URL) -> URL { named.cacheKey == url.cacheKey ? url : named }
        switch self {
        case .unsupportedURL(let named): return .unsupportedURL(asked(named))
        case .httpStatus(let code, let named): return .httpStatus(code: code, url: asked(named))
        case .timedOut(let named): return .timedOut(asked(named))
        case .responseTooLarge(let named, let limit): return .responseTooLarge(url: asked(named), byteLimit: limit)
        case .truncatedResponse(let named, let expected, let received):
            return .truncatedResponse(url: asked(named), expectedBytes: expected, receivedBytes: received)
        case .network(let named, let description): return .network(url: asked(named), description: description)
        case .invalidDataURL, .fileUnavailable, .decodingFailed, .cancelled: return self
        }
    }
}
