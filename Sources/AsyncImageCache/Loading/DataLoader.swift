import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default ``DataLoading``: picks the source by the URL's scheme.
///
/// - `data:` URLs are decoded in place (``DataURL``).
/// - `file:` URLs are read in place, never copied (``FileDataLoader``).
/// - `http:` and `https:` URLs are downloaded (``HTTPDataLoader``).
/// - Any other scheme fails with ``ImageLoadingError/unsupportedURL(_:)``.
///
/// ```swift
/// let loader = DataLoader(timeout: 15)
/// let bytes = try await loader.loadData(for: url)
/// ```
public struct DataLoader: DataLoading {
    /// The loader for `http:` and `https:` URLs.
    public let http: HTTPDataLoader
    /// The loader for `file:` URLs.
    public let file: FileDataLoader

    /// Creates a loader.
    ///
    /// - Parameters:
    ///   - timeout: How long, in seconds, an HTTP request may wait for its response or for more of its
    ///     body; 30 by default. On Linux it counts in whole seconds: a fraction is rounded up. `.infinity`
    ///     sets no limit.
    ///   - resourceTimeout: How long, in seconds, an HTTP download may take in all, however steadily its
    ///     bytes arrive; 5 minutes by default (see ``HTTPDataLoader/resourceTimeout``).
    ///   - maximumResponseBytes: The largest HTTP body to accept, in bytes; 64 MiB by default. `data:`
    ///     URLs are not capped: their size is already known to the app.
    ///   - maximumFileBytes: The largest local file to read, in bytes; `nil`, the default, reads any size
    ///     (see ``FileDataLoader/maximumBytes``). A larger one fails with
    ///     ``ImageLoadingError/responseTooLarge(url:byteLimit:)``.
    ///   - sessionConfiguration: The `URLSession` configuration for HTTP, copied; `nil`, the default,
    ///     means an ephemeral one. The copy has no `URLCache` (see
    ///     ``HTTPDataLoader/init(timeout:resourceTimeout:maximumResponseBytes:sessionConfiguration:)``).
    public init(
        timeout: TimeInterval = HTTPDataLoader.defaultTimeout,
        resourceTimeout: TimeInterval = HTTPDataLoader.defaultResourceTimeout,
        maximumResponseBytes: Int = HTTPDataLoader.defaultMaximumResponseBytes,
        maximumFileBytes: Int? = nil,
        sessionConfiguration: URLSessionConfiguration? = nil
    ) {
        http = HTTPDataLoader(
            timeout: timeout, resourceTimeout: resourceTimeout, maximumResponseBytes: maximumResponseBytes,
            sessionConfiguration: sessionConfiguration)
        file = FileDataLoader(maximumBytes: maximumFileBytes)
    }

    /// Fetches the complete bytes behind `url` from the source its scheme names.
    ///
    /// - Throws: ``ImageLoadingError/unsupportedURL(_:)`` for a scheme other than `data`, `file`, `http`
    ///   and `https`, or the error of the loader the scheme selects.
    public func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        switch url.scheme?.lowercased() {
        case "data":
            guard !Task.isCancelled else { throw .cancelled }
            return try DataURL(url: url).data
        case "file":
            return try await file.loadData(for: url)
        case "http", "https":
            return try await http.loadData(for: url)
        default:
            throw .unsupportedURL(url)
        }
    }

    /// Loads `url`; for `http(s)` with validators, asks the server whether the stored bytes are
    /// current (`If-None-Match`, `If-Modified-Since`). Other schemes load unconditionally.
    public func loadData(
        for url: URL, revalidating validators: HTTPCachePolicy?
    ) async throws(ImageLoadingError) -> ConditionalLoadResult {
        switch url.scheme?.lowercased() {
        case "http", "https":
            return try await http.loadData(for: url, revalidating: validators)
        default:
            return .modified(try await loadData(for: url), HTTPCachePolicy())
        }
    }
}
