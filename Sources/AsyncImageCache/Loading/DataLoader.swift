import Foundation

/// PLACEHOLDER until the loaders land: the default loader dispatching on the URL's scheme.
public struct DataLoader: DataLoading {
    /// Creates the default loader.
    public init() {}
    /// Fetches the bytes behind `url`.
    public func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        throw .unsupportedURL(url)
    }
}
