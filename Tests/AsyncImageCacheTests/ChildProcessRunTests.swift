import Foundation
import Spawn
import Testing

/// `ChildProcess.run`, which `aic demo` relaunches itself through: the whole of a large output, and a
/// failure that says how the child ended instead of a crash.
@Suite struct ChildProcessRunTests {
    /// More than a pipe holds (64 KiB on Linux): read to its end before the wait, so the child never
    /// blocks on a full pipe.
    @Test func anOutputLargerThanAPipeComesBackWhole() throws {
        let output = try ChildProcess.run("/bin/sh", arguments: ["-c", "head -c 1000000 /dev/zero"])
        #expect(output.count == 1_000_000)
    }

    @Test func anExitCodeOtherThanZeroIsAnErrorThatGivesIt() {
        let error = #expect(throws: ChildProcess.SpawnError.self) {
            try ChildProcess.run("/bin/sh", arguments: ["-c", "echo partial; exit 3"])
        }
        #expect(error?.description == "sh exited with code 3")
        #expect(error?.exitCode == 3)
    }

    @Test func aChildEndedByASignalIsAnErrorThatNamesIt() {
        let error = #expect(throws: ChildProcess.SpawnError.self) {
            try ChildProcess.run("/bin/sh", arguments: ["-c", "kill -SEGV $$"])
        }
        #expect(error?.description == "sh was ended by signal 11 (Segmentation fault)")
        #expect(error?.exitCode == nil)
    }

    @Test func anExecutableThatDoesNotExistIsAnError() {
        let error = #expect(throws: ChildProcess.SpawnError.self) {
            try ChildProcess.run("/nonexistent/aic", arguments: [])
        }
        #expect(error != nil && error?.exitCode == nil)
    }
}
