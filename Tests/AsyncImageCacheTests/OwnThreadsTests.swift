import Dispatch
import Testing

/// ``OwnThreadsTrait`` moves a test's body, and the code after each of its `await`s, off the cooperative
/// pool, where it runs without the trait.
@Suite struct OwnThreadsTests {
    @Test(.ownThreads) func aTestBodyUnderTheTraitRunsOnAQueueOfItsOwn() async throws {
        #expect(OwnThreadsExecutor.isCurrent)
        try await Task.sleep(for: .milliseconds(1))
        #expect(OwnThreadsExecutor.isCurrent)
        async let child = OwnThreadsExecutor.isCurrent
        #expect(await child)
    }

    @Test func withoutTheTraitABodyRunsOnNoneOfItsQueues() {
        #expect(!OwnThreadsExecutor.isCurrent)
    }
}
