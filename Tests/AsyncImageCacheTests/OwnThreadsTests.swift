import Dispatch
import Testing

/// ``OwnThreadsTrait`` moves a test's body, and the code after each of its `await`s, off the cooperative
/// pool, where it runs without the trait.
@Suite struct OwnThreadsTests {
    @Test(.ownThreads) func aTestBodyUnderTheTraitRunsOnAQueueOfItsOwn() async throws {
        #expect(ThreadPerJobExecutor.isCurrent)
        try await Task.sleep(for: .milliseconds(1))
        #expect(ThreadPerJobExecutor.isCurrent)
        async let child = ThreadPerJobExecutor.isCurrent
        #expect(await child)
    }

    @Test func withoutTheTraitABodyRunsOnNoneOfItsQueues() {
        #expect(!ThreadPerJobExecutor.isCurrent)
    }
}
