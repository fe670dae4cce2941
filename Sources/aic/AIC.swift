import AsyncImageCache
import Foundation

/// The `aic` command line: with no arguments it runs the demo.
@main
enum AIC {
    static let usage = """
        aic: load, cache and prepare images with AsyncImageCache.

        USAGE
          aic [demo [--keep]]   push the built-in sample set through the store (the default)
          aic --help            show this help

        EXIT CODES
          0 success, 1 the command failed, 2 bad usage
        """

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        let command = arguments.isEmpty ? "demo" : arguments.removeFirst()
        do {
            switch command {
            case "demo":
                let keep = arguments.contains("--keep")
                guard arguments.allSatisfy({ $0 == "--keep" }) else { fail(usage: "unknown option for demo: \(arguments)") }
                try await Demo.run(keepFiles: keep)
            case "--help", "-h", "help":
                print(usage)
            default:
                fail(usage: "unknown command: \(command)")
            }
        } catch {
            FileHandle.standardError.write(Data("aic: \(error)\n".utf8))
            exit(1)
        }
    }

    static func fail(usage message: String) -> Never {
        FileHandle.standardError.write(Data("aic: \(message)\n\(usage)\n".utf8))
        exit(2)
    }
}
