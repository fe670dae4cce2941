import Dispatch
import Testing

/// A trait that runs each test case's body on threads of its own instead of Swift's cooperative pool.
///
/// For the suites whose tests decode and compare pictures for seconds without an `await`. The pool has as
/// many threads as the machine has cores (two here) and does not add one for a thread that is busy, only
/// for one that blocks: two such test cases at once held both threads, and every other test's `await`
/// waited for them. A run's worst wait for a 100 ms `Task.sleep` was 21 s (2026-12-07), long enough
/// for a response a test held at its server to time out (after 30 s) before the test let it go.
/// On threads of their own, the busy tests share the cores with the rest as the kernel schedules them.
struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    /// Each test case's body; a suite's own scope is left alone.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(OwnThreadsExecutor.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs each test case's body on threads of its own, not on the cooperative pool (``OwnThreadsTrait``).
    static var ownThreads: Self { OwnThreadsTrait() }
}

/// A task executor that runs every job it is given on a thread of libdispatch's overcommitting pool, which
/// starts another thread whenever none is idle: a job that blocks waiting for another never waits for a
/// thread to run it on.
final class OwnThreadsExecutor: TaskExecutor {
    static let shared = OwnThreadsExecutor()
    private static let marker = DispatchSpecificKey<Bool>()

    /// Whether the caller runs a job of this executor.
    static var isCurrent: Bool { DispatchQueue.getSpecific(key: marker) == true }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        // A serial queue of its own targets the overcommitting root queue; the global queues do not.
        let queue = DispatchQueue(label: "AsyncImageCacheTests.own-threads")
        queue.setSpecific(key: Self.marker, value: true)
        queue.async { job.runSynchronously(on: executor) }
    }
}
