import Foundation

/// Where `aic` writes: results to stdout, progress and diagnostics to stderr.
enum Console {
    /// Writes `line` and a newline to stdout.
    static func out(_ line: String) {
        print(line)
    }

    /// Writes `text` to stderr as it is, unbuffered, so progress shows at once. What cannot be written
    /// (stderr closed, a log file on a full disk, or a pipe whose reader has gone) is dropped:
    /// `FileHandle.write(_:)`, used before, trapped then, and a sheet that would have been written ended
    /// with SIGILL at its first progress line.
    static func error(_ text: String) {
        #if os(Linux)
        // A pipe whose reader has gone (`aic sheet ... 2>&1 | head -1`) raises SIGPIPE at the write, whose
        // default action ended aic there: it is blocked on this thread for the write (the signal goes to the
        // thread that writes), and one the write raised is taken back before the mask is restored.
        var brokenPipe = sigset_t()
        sigemptyset(&brokenPipe)
        sigaddset(&brokenPipe, SIGPIPE)
        var pending = sigset_t()
        sigpending(&pending)
        let wasPending = sigismember(&pending, SIGPIPE) == 1
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &brokenPipe, &previous)
        defer {
            if !wasPending, sigpending(&pending) == 0, sigismember(&pending, SIGPIPE) == 1 {
                var now = timespec(tv_sec: 0, tv_nsec: 0)
                _ = sigtimedwait(&brokenPipe, nil, &now)
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        #endif
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// Whether stderr is a terminal, so that progress can redraw one line instead of adding many.
    static var stderrIsTerminal: Bool {
        isatty(STDERR_FILENO) == 1
    }

    /// `text` on one line: a failure is reported as exactly one line, whatever the error said, and
    /// without the control characters a path in it may hold (see ``printable(_:)``).
    static func oneLine(_ text: String) -> String {
        printable(
            text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .joined(separator: " "))
    }

    /// `text` with each control character (a newline, a carriage return, an escape that a terminal would
    /// obey) shown as `?`, a tab as a space: file names and URLs may hold any of them, and what aic prints
    /// of them must stay on its own line and must not drive the terminal.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory != .control {
                result.append(scalar)
            } else {
                result.append(scalar == "\t" ? " " : "?")
            }
        }
        return String(result)
    }
}

/// Human-readable numbers for summaries.
enum Formatted {
    /// A byte count in decimal units: `812 B`, `45.3 KB`, `12.1 MB`, `1.4 GB`.
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    /// A duration in seconds with two decimals, e.g. `1.42 s`.
    static func seconds(_ duration: Duration) -> String {
        let components = duration.components
        return String(format: "%.2f s", Double(components.seconds) + Double(components.attoseconds) / 1e18)
    }

    /// An age in the largest whole unit that fits: `45 seconds`, `12 minutes`, `3 hours`, `7 days`.
    static func age(_ seconds: Double) -> String {
        let units: [(String, Double)] = [("day", 86_400), ("hour", 3600), ("minute", 60)]
        let (unit, length) = units.first { seconds >= $0.1 } ?? ("second", 1)
        // Clamped: Int(_:) traps on an age longer than Int.max units (aic cache trim --max-age 1e300).
        let whole = (max(0, seconds) / length).rounded(.down)
        let count = whole.isNaN ? 0 : whole >= Double(Int.max) ? Int.max : Int(whole)
        return "\(count) \(unit)\(count == 1 ? "" : "s")"
    }

    /// A duration the user gave, exactly: in the largest unit it is a whole number of (`7 days`,
    /// `36 hours`, `90 seconds`), else in seconds (`0.5 seconds`). ``age(_:)`` rounds down: 36 hours
    /// read "1 day" in `aic cache trim --max-age 36h`, which had kept entries a day and more old.
    static func exactAge(_ seconds: Double) -> String {
        let units: [(String, Double)] = [("day", 86_400), ("hour", 3600), ("minute", 60), ("second", 1)]
        for (unit, length) in units where seconds >= length {
            let count = seconds / length
            // Past 2^53 a Double holds only whole numbers, and past Int.max Int(_:) traps.
            guard count == count.rounded(), count < 0x1p53 else { continue }
            return "\(Int(count)) \(unit)\(count == 1 ? "" : "s")"
        }
        return String(format: "%g seconds", seconds)
    }

    /// A date in ISO 8601, UTC, to the second, e.g. `2025-11-30T08:22:00Z`.
    static func date(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}

/// One JSON object on one line with its keys in the order given, for `--json` output that reads
/// the same on every run.
struct JSONObject {
    /// A JSON value the commands print.
    enum Value {
        case int(Int)
        case string(String)
        case null
    }

    private var fields: [(String, Value)] = []

    init(_ fields: KeyValuePairs<String, Value>) {
        self.fields = fields.map { ($0.key, $0.value) }
    }

    /// `{"key":value,...}`.
    var text: String {
        "{" + fields.map { Self.quoted($0.0) + ":" + Self.encode($0.1) }.joined(separator: ",") + "}"
    }

    private static func encode(_ value: Value) -> String {
        switch value {
        case .int(let number): String(number)
        case .string(let text): quoted(text)
        case .null: "null"
        }
    }

    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20: result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
