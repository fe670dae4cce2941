import Foundation
import Spawn
import Testing

@testable import AsyncImageCache

@Suite struct DiskStoreOtherUserLockTests {
    /// A write of another user (another container sharing the folder under its own uid), made under
    /// umask 077, is a file this process may not open, so its lock cannot be asked: it was removed as a
    /// leftover while its writer held it locked.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func aLockedTemporaryFileAnotherUserCannotOpenIsKept() throws {
        let root = TemporaryDirectory("review-uid")
        let folder = root.url.appendingPathComponent("writer", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for path in [root.url.path, folder.path] { chmod(path, 0o777) }
        // Its writer's id, in its own PID namespace, is no process here.
        let writing = folder.appendingPathComponent(".tmp-4000000-\(UUID().uuidString)")
        try Data(repeating: 4, count: 500).write(to: writing)
        chmod(writing.path, 0o600)
        let descriptor = open(writing.path, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        try #require(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        // A store of uid 65534 opens the folder, run from a copy it may run wherever the checkout is.
        let executable = root.url.appendingPathComponent("aic")
        try CommandLineRunner.copyExecutable(to: executable)
        let errors = root.url.appendingPathComponent("errors.txt").path
        try Data().write(to: URL(fileURLWithPath: errors))
        var (status, log) = (Int32?.none, "")
        // Up to five tries, only while the copy cannot run yet: see ``CommandLineRunner/copyExecutable(to:)``.
        for attempt in 1...5 {
            let child = try ChildProcess(
                executable: "/usr/bin/setpriv",
                arguments: [
                    "--reuid=65534", "--regid=65534", "--clear-groups", executable.path, "_cache-writer", "--root",
                    root.url.path,
                ],
                environment: ProcessInfo.processInfo.environment, directory: "/", standardOutput: "/dev/null",
                standardError: errors)
            status = ChildProcess.exitCode(of: child.waitForExit())
            log = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            guard attempt < 5, status == 126, log.contains("Text file busy") else { break }
            usleep(100_000)
        }
        #expect(status == 0, "\(log)")
        #expect(FileManager.default.fileExists(atPath: writing.path), "a locked write was removed as a leftover")
    }
}
