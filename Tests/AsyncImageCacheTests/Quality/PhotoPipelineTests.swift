import Testing

/// The suites that push whole photos through the store, nested here to run one test at a time.
///
/// Decoding and resizing run synchronously on the cooperative thread pool, which has one thread per
/// core. Run side by side, these tests could hold every thread for seconds, and the suites that wait on
/// sockets and cancellation meanwhile would stall; one at a time, they leave the other threads free.
@Suite(.serialized) enum PhotoPipelineTests {}
