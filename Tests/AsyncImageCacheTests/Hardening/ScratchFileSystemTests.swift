import Foundation
import Testing

/// The tmpfs the fault tests mount: made read-only while a write is still under way, it waits for the write
/// to end rather than failing the test with `mount`'s status 32.
@Suite struct ScratchFileSystemTests {
    @Test(.enabled(if: ScratchFileSystem.isAvailable, "needs root to mount a tmpfs"))
    func aRemountReadOnlyWaitsForAWriteUnderWay() throws {
        let volume = try ScratchFileSystem(byteCount: 64 * 1024)
        let path = volume.url.appendingPathComponent("open").path
        // Open for writing: the kernel refuses `remount,ro` until it is closed.
        let descriptor = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0)
        let closed = DispatchSemaphore(value: 0)
        // A thread of its own: Dispatch's pool, busy with the rest of a whole-suite run, started the close late.
        Thread.detachNewThread {
            usleep(200_000)
            close(descriptor)
            closed.signal()
        }
        defer {
            closed.wait()
            try? volume.setReadOnly(false)
        }
        try volume.setReadOnly(true)
        #expect(open(path, O_WRONLY | O_CLOEXEC) == -1 && errno == EROFS)
    }
}
