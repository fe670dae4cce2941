import Testing

@testable import AsyncImageCache

/// A run that ends with only the holds of a load that took it over hands its value to `whenUnclaimed`,
/// which keeps it for that load; a run someone waits for gives it to its waiters alone.
@Suite(.timeLimit(.minutes(1))) struct InFlightUnclaimedTests {
    /// A run's work that waits until ``finish(with:)``.
    private final class Gate: Sendable {
        private let state = LockedBox((started: false, continuation: CheckedContinuation<Int, Never>?.none))

        var hasStarted: Bool { state.withLock { $0.started } }

        func work() async -> Int {
            await withCheckedContinuation { continuation in
                state.withLock { $0 = (true, continuation) }
            }
        }

        func finish(with value: Int) {
            state.withLock { $0.continuation }?.resume(returning: value)
        }
    }

    /// A run for "a" started by one waiter, whose work waits at a gate, and the values its `whenUnclaimed` got.
    private static func startHeldRun() async throws -> (
        table: InFlightTable<String, Int>, gate: Gate, unclaimed: LockedBox<[Int]>,
        waiter: Task<InFlightTable<String, Int>.Outcome, Never>
    ) {
        let table = InFlightTable<String, Int>()
        let (gate, unclaimed) = (Gate(), LockedBox([Int]()))
        let waiter = Task {
            await table.value(for: "a", whenUnclaimed: { value in unclaimed.withLock { $0.append(value) } }) { _ in
                .success(await gate.work())
            }
        }
        try await waitUntil { gate.hasStarted }
        return (table, gate, unclaimed, waiter)
    }

    @Test func aRunEndingWithOnlyHoldsHandsItsValueToWhenUnclaimed() async throws {
        let (table, gate, unclaimed, waiter) = try await Self.startHeldRun()
        let release = try #require(table.hold { $0 == "a" })
        waiter.cancel()
        #expect(await waiter.value == .failure(.cancelled))
        #expect(table.contains("a"), "held, the run goes on")
        gate.finish(with: 7)
        try await waitUntil { !table.contains("a") }
        #expect(unclaimed.withLock { $0 } == [7])
        release()
    }

    @Test func aRunSomeoneWaitsForGivesItsValueToItsWaitersAlone() async throws {
        let (table, gate, unclaimed, waiter) = try await Self.startHeldRun()
        let release = try #require(table.hold { $0 == "a" })
        gate.finish(with: 7)
        #expect(await waiter.value == .success(7))
        #expect(unclaimed.withLock { $0 }.isEmpty)
        release()
    }
}
