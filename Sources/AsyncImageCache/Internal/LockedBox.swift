import Foundation

/// A value guarded by a lock, for state that is read synchronously on hot paths.
///
/// Never call out to user code or do I/O inside `withLock`: every other reader waits meanwhile.
final class LockedBox<Value>: @unchecked Sendable {
    // Every access to `value` goes through `withLock`, which holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
