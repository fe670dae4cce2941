import CFuzzerDriver
import Foundation

// SwiftPM on Linux links an executable with `main` pointing at the module's own entry point, so
// libFuzzer's `main` is never used: this top-level code picks the target and hands over to
// libFuzzer's driver. One binary serves every target, chosen by `FUZZ_TARGET`.
guard FuzzTargets.selected != nil else {
    let names = FuzzTargets.all.keys.sorted().joined(separator: ", ")
    FileHandle.standardError.write(Data("ImageFuzzer: set FUZZ_TARGET to one of: \(names)\n".utf8))
    exit(2)
}
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(
    LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in
        FuzzTargets.selected?(bytes.map { Data(bytes: $0, count: count) } ?? Data())
        return 0
    })
