import Foundation

/// Runs `body` over every item, `passes` times, and returns the mean time per call in microseconds.
/// Callers take one such sample per round and interleave the contenders of a table round by
/// round, so machine noise hits all of them alike; the table reports the median round.
func perItemMicroseconds<T>(_ items: [T], passes: Int = 1, _ body: (T) -> Void) -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    for _ in 0..<passes {
        for item in items { body(item) }
    }
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return seconds * 1e6 / Double(items.count * passes)
}

/// Collects one sample per round for each named contender and reports medians.
struct Contest {
    private(set) var samples: [String: [Double]] = [:]
    private(set) var order: [String] = []

    mutating func record(_ name: String, _ value: Double) {
        if samples[name] == nil { order.append(name) }
        samples[name, default: []].append(value)
    }

    func median(_ name: String) -> Double {
        let sorted = (samples[name] ?? [.nan]).sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

/// A duration in milliseconds.
func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
}

/// A benchmark that cannot run, with the reason.
struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

func format(_ value: Double, digits: Int = 2) -> String {
    String(format: "%.\(digits)f", value)
}

func column(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

/// Keeps a value alive and opaque so the optimizer cannot drop the work that made it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
