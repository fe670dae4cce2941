#if os(Linux)
import Foundation

/// Peak memory of the test process. Both figures are process-wide, so a test reads them inside an exit
/// test (`#expect(processExitsWith:)`), whose child process runs nothing else: in the shared process,
/// tests running in parallel raise them too.
enum PeakMemory {
    /// The peak resident set (`VmHWM` in `/proc/self/status`), in KiB.
    static func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// How many times the resident set grows for each byte the code under test touches: 1, and 3 under
    /// ThreadSanitizer (`scripts/test-tsan`), whose shadow of every byte touched is resident too (the
    /// 16777216x1 canvas of `ResizeThinImageTests`: 67 MiB, and 201 MiB under it).
    static let growthFactor = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") == nil ? 1 : 3

    /// Runs `body`, then stops the process with status 1 (after printing the growth) when the peak resident
    /// set grew by `limitMiB` (times ``growthFactor``) or more while it ran; for the body of an exit test
    /// that expects success.
    static func expectGrowth<T>(
        belowMiB limit: Int, _ what: String, _ body: () async throws -> T
    ) async rethrows -> T {
        let limitMiB = limit * growthFactor
        let before = residentKiB()
        let result = try await body()
        let growth = residentKiB() - before
        print("\(what): peak RSS grew by \(growth / 1024) MiB")
        if growth >= limitMiB * 1024 {
            print("\(what): peak RSS grew by \(growth / 1024) MiB, the limit is \(limitMiB) MiB")
            exit(1)
        }
        return result
    }
}
#endif
