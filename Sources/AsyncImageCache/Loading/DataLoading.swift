import Foundation

/// A capability that fetches the bytes behind a URL.
///
/// Implementations throw ``ImageLoadingError`` and honour task cancellation by stopping their work
/// and throwing ``ImageLoadingError/cancelled``.
public protocol DataLoading: Sendable {
    /// Fetches the complete bytes behind `url`.
    func loadData(for url: URL) async throws(ImageLoadingError) -> Data
}
