import Foundation

// `localizedDescription` is what UI code shows; without these it would read "The operation could not
// be completed. (AsyncImageCache.ImageLoadingError error 8.)" instead of what went wrong.

extension ImageLoadingError: LocalizedError {
    /// The same line as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension ImageDecodingError: LocalizedError {
    /// The same line as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension ImageStore.ConfigurationError: LocalizedError {
    /// The same line as ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }
}
