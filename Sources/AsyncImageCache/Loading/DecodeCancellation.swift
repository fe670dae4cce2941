import CAtomicFlag

/// The signal that stops a decode already running once nobody wants its image: raised when every
/// waiter of the load has gone (the in-flight run's task is cancelled), polled by the decoders that
/// work row by row every few rows, and by the WebP decoder between the chunks of the file it hands
/// libwebp.
///
/// A decode runs on the decode queue, outside any task, so it cannot ask `Task.isCancelled`; and a
/// lock per check would cost more than the rows it saves on small images. The flag is one `int` read
/// atomically, by Swift through `CAtomicFlag` and by the libjpeg wrapper straight from C.
final class DecodeCancellation: @unchecked Sendable {
    // `flag` is only read and written through `catomic_flag_*` (atomic); `rowObserver` never changes.
    private let flag: UnsafeMutablePointer<Int32>
    /// Called, on the decoding thread, with the source rows decoded so far and the rows in all, after
    /// each batch (tests: to see how far a decode went, and to hold it there).
    let rowObserver: (@Sendable (_ rowsDecoded: Int, _ totalRows: Int) -> Void)?

    init(rowObserver: (@Sendable (_ rowsDecoded: Int, _ totalRows: Int) -> Void)? = nil) {
        flag = .allocate(capacity: 1)
        flag.initialize(to: 0)
        self.rowObserver = rowObserver
    }

    deinit {
        flag.deallocate()
    }

    /// Whether the decode should stop.
    var isCancelled: Bool { catomic_flag_is_raised(flag) != 0 }

    /// Asks the decode to stop; it does so at its next check.
    func cancel() {
        catomic_flag_raise(flag)
    }

    /// The flag's address, for C code that polls it atomically; valid while this object lives.
    var flagAddress: UnsafePointer<Int32> { UnsafePointer(flag) }

    /// Tells the row observer that `rowsDecoded` of `totalRows` source rows are decoded.
    func report(rowsDecoded: Int, of totalRows: Int) {
        rowObserver?(rowsDecoded, totalRows)
    }
}
