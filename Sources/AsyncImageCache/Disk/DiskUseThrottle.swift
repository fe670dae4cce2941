import Dispatch

/// How often a memory entry has its disk file marked used: an image served from memory all day is
/// never read from disk, and its file would otherwise look unused and be the first a trim removes.
///
/// Each entry of the memory tiers holds one. A hit asks ``claim(at:)``; the first hit, then at most one
/// per ``interval``, has the file dated on the disk queue. A hot loop of hits costs a lock and a clock
/// read each, never a system call.
final class DiskUseThrottle: Sendable {
    /// One minute, in nanoseconds: a trim orders files served from memory to about the minute.
    static let interval: UInt64 = 60 * 1_000_000_000

    /// When the file was last marked, in ``now`` nanoseconds; `nil` before the first hit.
    private let lastMarked = LockedBox<UInt64?>(nil)

    /// Monotonic nanoseconds, for ``claim(at:)``.
    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Whether a hit at `now` marks the file: the first hit, then the first once ``interval`` has passed
    /// since the last mark.
    func claim(at now: UInt64 = DiskUseThrottle.now) -> Bool {
        lastMarked.withLock { last in
            if let last, now >= last, now - last < Self.interval { return false }
            last = now
            return true
        }
    }
}
