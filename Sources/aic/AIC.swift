// For `stdout`, a C global that Swift 6 refuses without it; aic reads it once, at exit.
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif
import AsyncImageCache
import Foundation

/// One `aic` subcommand: its help and options, and the work it does.
protocol Subcommand: Sendable {
    /// The word that selects it, e.g. `info`.
    static var name: String { get }
    /// One line for the command list in `aic --help`.
    static var summary: String { get }
    /// The usage lines, shown with a usage error and at the top of the help.
    static var synopsis: String { get }
    /// The rest of `aic NAME --help`: options with defaults, examples.
    static var details: String { get }
    /// Options that take a value.
    static var options: Set<String> { get }
    /// Options that take none.
    static var flags: Set<String> { get }
    /// Runs the command; throws ``UsageError`` or ``CommandFailure`` (or a library error) to fail.
    static func run(_ arguments: Arguments) async throws
}

/// The `aic` command line: with no arguments it runs the demo.
@main
enum AIC {
    static var subcommands: [any Subcommand.Type] {
        [Demo.self, InfoCommand.self, ThumbnailCommand.self, SheetCommand.self, CacheCommand.self]
    }

    /// Commands left out of the help: harnesses for the test suite.
    static var hiddenSubcommands: [any Subcommand.Type] { [CacheWriterCommand.self] }

    static let exitCodes = """
        EXIT CODES
          0  success
          1  the command failed; one line on stderr, starting with "aic: ", says why
          2  bad usage: an unknown command or option, a missing or invalid value
        """

    static var usage: String {
        let commands = subcommands.map {
            "  " + $0.name.padding(toLength: 11, withPad: " ", startingAt: 0) + $0.summary
        }
        return """
            aic: load, cache and prepare images with AsyncImageCache.

            USAGE
              aic [COMMAND] [ARGUMENTS]     with no command, aic runs the demo
              aic COMMAND --help            a command's options and examples

            COMMANDS
            \(commands.joined(separator: "\n"))

            INPUT is a file path or an http:, https:, file: or data: URL. Images load through the
            store named "default" in $XDG_CACHE_HOME/AsyncImageCache (~/.cache/AsyncImageCache when
            XDG_CACHE_HOME is unset), whose disk tier keeps remote images between runs.

            EXAMPLES
              aic info photo.jpg
              aic thumbnail https://example.com/photo.jpg --width 320 --radius 12 --output thumb.png
              aic sheet ~/Pictures --width 200 --output sheet.png
              aic cache stats

            \(exitCodes)
            """
    }

    static func main() async {
        StandardStreams.holdClosedOnes()
        if let limit = DescriptorLimit.raise(), limit < DescriptorLimit.minimum {
            Console.error(
                "aic: only \(limit) files may be open at once (ulimit -n); aic needs \(DescriptorLimit.minimum)\n")
            exit(1)
        }
        await runCommandLine()
        // A signal that arrived as the demo ended ends aic once its handler is done, as a moment sooner.
        while Interruption.isInProgress { pause() }
        // stdout is buffered: a write that failed (a full disk) is known only now, and the output is lost.
        guard fflush(stdout) == 0, ferror(stdout) == 0 else {
            Console.error("aic: cannot write to stdout: \(String(cString: strerror(errno)))\n")
            exit(1)
        }
    }

    private static func runCommandLine() async {
        var words = Array(CommandLine.arguments.dropFirst())
        let helpWords = ["--help", "-h", "help"]
        // No command but options: they are the demo's (`aic [demo] [--output sheet.png] [--keep]`).
        let startsWithOption = words.first.map { $0.hasPrefix("-") && !helpWords.contains($0) } ?? true
        let name = startsWithOption ? "demo" : words.removeFirst()
        if helpWords.contains(name) {
            guard let topic = words.first else {
                Console.out(usage)
                return
            }
            // `aic help COMMAND`, as `aic COMMAND --help`; a word that names no command is a usage error,
            // as it is without `help`.
            guard words.count == 1, let command = (subcommands + hiddenSubcommands).first(where: { $0.name == topic })
            else {
                let problem = words.count == 1 ? "unknown command \(topic)" : "help takes one command name"
                exitWithUsageError(UsageError(problem), synopsis: "aic help [COMMAND]", helpCommand: "aic --help")
            }
            Console.out(help(for: command))
            return
        }
        guard let command = (subcommands + hiddenSubcommands).first(where: { $0.name == name }) else {
            exitWithUsageError(
                UsageError("unknown command \(name)"), synopsis: "aic [COMMAND] [ARGUMENTS]", helpCommand: "aic --help")
        }
        do {
            let arguments = try Arguments(words, options: command.options, flags: command.flags)
            if arguments.wantsHelp {
                Console.out(help(for: command))
                return
            }
            try await command.run(arguments)
        } catch let error as UsageError {
            exitWithUsageError(error, synopsis: command.synopsis, helpCommand: "aic \(command.name) --help")
        } catch {
            // An interrupted demo ends by its signal once its handler is done (``Interruption``): what failed
            // under it (the relaunched pass it ended) is not reported.
            while Interruption.isInProgress { pause() }
            if !(error is ReportedFailure) { Console.error("aic: \(Console.oneLine(message(for: error)))\n") }
            exit(1)
        }
    }

    /// `aic NAME --help`.
    static func help(for command: any Subcommand.Type) -> String {
        let sections = ["USAGE\n" + indented(command.synopsis), command.details, exitCodes]
        return (["aic \(command.name): \(command.summary)"] + sections).joined(separator: "\n\n")
    }

    private static func exitWithUsageError(_ error: UsageError, synopsis: String, helpCommand: String) -> Never {
        Console.error("aic: \(error.message)\nusage:\n\(indented(synopsis))\nSee `\(helpCommand)`.\n")
        exit(2)
    }

    private static func indented(_ text: String) -> String {
        text.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
    }

    /// What a failure says, in the library's own words where it has them.
    static func message(for error: any Error) -> String {
        if let failure = error as? CommandFailure { return failure.message }
        if let reason = fileSystemReason(error as NSError) { return reason }
        switch error {
        // The library's errors (ImageLoadingError, ImageDecodingError, ...) describe themselves in one line.
        case let error as any CustomStringConvertible: return error.description
        default: return error.localizedDescription
        }
    }

    /// A Foundation file operation's error as `PATH: reason` (`/tmp/x: No such file or directory`); `nil` for
    /// other errors. Its description, which the case above gave, is a dump of its domain, code and user info:
    /// `Error Domain=NSCocoaErrorDomain Code=4 "The file doesn't exist." UserInfo={NSURL=..., ...}`.
    private static func fileSystemReason(_ error: NSError) -> String? {
        guard [NSCocoaErrorDomain, NSPOSIXErrorDomain].contains(error.domain) else { return nil }
        // The underlying error may be a `POSIXError`, which `as? NSError` does not bridge out of `Any` on Linux.
        let underlying = (error.userInfo[NSUnderlyingErrorKey] as? any Error).map { $0 as NSError }
        let posix = error.domain == NSPOSIXErrorDomain ? error : underlying
        let reason =
            posix.flatMap { $0.domain == NSPOSIXErrorDomain ? String(cString: strerror(Int32($0.code))) : nil }
            ?? error.localizedDescription
        return (error.userInfo[NSFilePathErrorKey] as? String).map { "\($0): \(reason)" } ?? reason
    }
}
