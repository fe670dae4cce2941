import Foundation

/// A value guarded by a lock, for state that is read synchronously on hot paths.
///
/// Never call out to user code or do I/O inside `withLock`: every other reader waits meanwhile.
final class LockedBox<Value>: @unchecked Sendable {
    // Every access to the value goes through `withLock`, which holds `lock`. The value lives behind
    // a pointer rather than in a stored `var`: the lock already makes access exclusive, and a
    // stored property would add a dynamic exclusivity check to every hot-path read.
    private let lock = NSLock()
    private let value: UnsafeMutablePointer<Value>

    init(_ value: Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value.pointee)
    }
}
