import Foundation
import Spawn
import Testing

/// `aic thumbnail` and `aic sheet` stopped by Ctrl-C (`SIGINT`) while they write their PNG.
@Suite struct CLIOutputInterruptionTests {
    /// How many runs each command gets: the signal lands in the write most times, not every time.
    static let runs = 6

    /// A signal that came during the output's write ended aic in the middle of Foundation's atomic write,
    /// whose temporary file (`.dat.nosync...`, the whole PNG) stayed beside the output for good. The
    /// write is now finished first; aic then ends by the signal, the output written.
    @Test(arguments: ["thumbnail", "sheet"])
    func aCommandInterruptedWhileWritingItsOutputLeavesNoTemporaryFile(command: String) async throws {
        let aic = CommandLineRunner()
        // Large enough that its PNG takes a while to write: several megabytes.
        try SampleImages.jpeg(width: 2400, height: 1800).write(to: aic.file("photo.jpg"))
        var leftovers: [String] = []
        for run in 1...Self.runs {
            let folder = aic.workspace.url.appendingPathComponent("out-\(run)", isDirectory: true)
            let png = folder.appendingPathComponent("out.png").path
            leftovers += try await CLIDemoInterruptionTests.leftBesideOutput(
                of: aic, running: [command, "photo.jpg", "--width", "2400", "--output", png], in: folder)
        }
        #expect(leftovers.isEmpty, "left beside the output in \(leftovers.count) of \(Self.runs) runs: \(leftovers)")
    }
}
