import Foundation

/// A capability that fetches the bytes behind a URL.
///
/// Implementations throw ``ImageLoadingError`` and honour task cancellation by stopping their work
/// and throwing ``ImageLoadingError/cancelled``.
///
/// A fetch runs in a task of its own, at the priority of the load that started it: `.utility` for a
/// prefetch (``ImageStore/startPrefetching(_:)``), the caller's for a visible load. When a visible
/// load joins a prefetch's fetch, that task is escalated to the load's priority (on Apple platforms
/// from the 26 releases on), so a loader that schedules its own work can read `Task.currentPriority`,
/// or wrap its wait in `withTaskPriorityEscalationHandler`, to serve what is on screen first.
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
