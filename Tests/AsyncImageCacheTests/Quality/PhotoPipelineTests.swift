import Testing

/// The suites that push whole photos through the store, nested here to share one trait.
///
/// Their decoding and resizing run synchronously for seconds. On Swift's cooperative pool, which has one
/// thread per core, they could hold every thread, and the suites that wait on sockets and cancellation
/// meanwhile would stall: they run on threads of their own instead (``OwnThreadsTrait``).
@Suite(.ownThreads) enum PhotoPipelineTests {}
