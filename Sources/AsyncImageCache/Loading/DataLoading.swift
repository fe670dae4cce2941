import Foundation

/// A capability that fetches the bytes behind a URL.
///
/// Implementations throw ``ImageLoadingError`` and honour task cancellation by stopping their work
/// and throwing ``ImageLoadingError/cancelled``.
public protocol DataLoading: Sendable {
    /// Fetches the complete bytes behind `url`.
    func loadData(for url: URL) async throws(ImageLoadingError) -> Data

    /// Fetches `url`, or with `validators` asks the source whether the stored bytes are current.
    ///
    /// A default implementation fetches unconditionally with an empty ``HTTPCachePolicy``;
    /// ``DataLoader`` speaks HTTP caching (`Cache-Control`, `ETag`, `Last-Modified`, `304`).
    func loadData(for url: URL, revalidating validators: HTTPCachePolicy?) async throws(ImageLoadingError)
        -> ConditionalLoadResult
}
