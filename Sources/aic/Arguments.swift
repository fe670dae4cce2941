/// One subcommand's command line, split into options, flags and positional arguments.
///
/// Options take a value (`--width 320` or `--width=320`), flags take none (`--json`); `--` ends the
/// options, so a file named `--odd.jpg` can still be given. Anything else that starts with `-` is a
/// usage error, and so is an option given twice: a typo must not silently fall back to a default.
///
/// ```swift
/// let arguments = try Arguments(["a.jpg", "--width", "320"], options: ["--width"], flags: ["--json"])
/// let width = try arguments.integer("--width", default: 240, in: 1...10_000)   // 320
/// ```
struct Arguments {
    /// The arguments that are not options, in order.
    private(set) var positionals: [String] = []
    /// Whether `-h` or `--help` appeared before `--`.
    private(set) var wantsHelp = false
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    /// Parses `words` against the options (with a value) and flags (without) a command accepts.
    init(_ words: [String], options: Set<String>, flags knownFlags: Set<String>) throws(UsageError) {
        var remaining = words[...]
        while let word = remaining.popFirst() {
            if word == "--" {
                guard !remaining.contains("") else { throw UsageError(Self.emptyArgument) }
                positionals += remaining
                break
            }
            if word == "-h" || word == "--help" {
                wantsHelp = true
                continue
            }
            guard word.hasPrefix("-"), word != "-" else {
                // "" would otherwise name the current folder.
                guard !word.isEmpty else { throw UsageError(Self.emptyArgument) }
                positionals.append(word)
                continue
            }
            // Empty pieces are kept: `--output=` has an empty value, which must not take the next word.
            let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let name = parts[0]
            if knownFlags.contains(name) {
                guard parts.count == 1 else { throw UsageError("\(name) takes no value") }
                guard flags.insert(name).inserted else { throw UsageError("\(name) given twice") }
            } else if options.contains(name) {
                // A value may itself start with "-" (a negative number, a file name), so take the next word as is.
                guard let value = parts.count == 2 ? parts[1] : remaining.popFirst(), !value.isEmpty else {
                    throw UsageError("\(name) needs a value")
                }
                guard values.updateValue(value, forKey: name) == nil else { throw UsageError("\(name) given twice") }
            } else {
                throw UsageError("unknown option \(name)")
            }
        }
    }

    private static let emptyArgument = "an empty argument: give a file path or a URL"

    /// The one positional argument `command` takes, called `what` in the message when there is
    /// none or more than one.
    func single(_ what: String, of command: String) throws(UsageError) -> String {
        guard positionals.count == 1 else {
            throw UsageError(positionals.isEmpty ? "\(command) needs an \(what)" : "\(command) takes one \(what)")
        }
        return positionals[0]
    }

    /// Whether the flag `name` was given.
    func flag(_ name: String) -> Bool {
        flags.contains(name)
    }

    /// The value of option `name`, or `nil` when it was not given.
    func value(_ name: String) -> String? {
        values[name]
    }

    /// The value of option `name`, which the command cannot do without.
    func required(_ name: String) throws(UsageError) -> String {
        guard let value = values[name], !value.isEmpty else { throw UsageError("\(name) is required") }
        return value
    }

    /// The whole number given for `name`, or `defaultValue` when it was not given.
    func integer(
        _ name: String, default defaultValue: Int? = nil, in range: ClosedRange<Int>
    ) throws(UsageError) -> Int {
        guard let text = values[name] else {
            guard let defaultValue else { throw UsageError("\(name) is required") }
            return defaultValue
        }
        guard let number = Int(text), range.contains(number) else {
            let bounds = "\(range.lowerBound) to \(range.upperBound)"
            throw UsageError("\(name) must be a whole number from \(bounds), not \"\(text)\"")
        }
        return number
    }

    /// A duration for `name` in seconds: a plain number of seconds, or one with a unit suffix
    /// (`90s`, `30m`, `12h`, `7d`); `defaultValue` when it was not given.
    func duration(_ name: String, default defaultValue: Double) throws(UsageError) -> Double {
        guard let text = values[name] else { return defaultValue }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        let unit = text.last.flatMap { units[$0] }
        let number = Double(unit == nil ? Substring(text) : text.dropLast())
        // Checked after the unit is applied: 1e306d is finite, but not in seconds.
        guard let seconds = number.map({ $0 * (unit ?? 1) }), seconds.isFinite, seconds >= 0 else {
            throw UsageError("\(name) must be seconds, or a number ending in s, m, h or d (e.g. 7d), not \"\(text)\"")
        }
        return seconds == 0 ? 0 : seconds  // -0 passes `>= 0`, and printed as "-0 seconds"
    }
}

/// A command line that the command cannot run: `aic` says why, shows the usage and exits with 2.
struct UsageError: Error, Equatable {
    let message: String

    init(_ message: String) {
        self.message = message
    }
}

/// A command that failed where its one line is already on stderr, written by the aic it relaunched (the
/// demo's relaunch pass), which shares it: `aic` exits with 1 and prints nothing more.
struct ReportedFailure: Error {}

/// A command that ran and failed: `aic` prints the one-line message and exits with 1.
struct CommandFailure: Error {
    let message: String

    init(_ message: String) {
        self.message = message
    }
}
