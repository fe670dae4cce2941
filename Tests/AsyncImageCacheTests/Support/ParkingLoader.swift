import Foundation

@testable import AsyncImageCache

/// Reads files with the real loader, counts the reads and, once its gate is armed, holds the next read
/// after it has read the bytes: a read of a slow disk, still in flight while the test changes the file.
final class ParkingLoader: DataLoading, Sendable {
    let gate = ParkingGate()
    private let base = DataLoader()
    private let reads = LockedBox(0)

    /// The reads finished so far, held or not.
    var readCount: Int { reads.withLock { $0 } }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        let data = try await base.loadData(for: url)
        reads.withLock { $0 += 1 }
        await parkOffThePool()
        return data
    }

    /// Parks at the gate on a thread of its own, so a held read does not take one of the pool's threads.
    private func parkOffThePool() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread { [gate] in
                gate.parkIfArmed()
                continuation.resume()
            }
        }
    }
}
