import Foundation

/// The thumbnail benchmark's one table: ours against the reference, the ratio and whether the goal is met.
struct ResultTable {
    private var rows: [[String]] = []

    /// A timing row; `ours` and `reference` in milliseconds, the goal a ceiling on their ratio (none: "-").
    mutating func add(_ name: String, ours: Double, reference: Double, goalRatio: Double?) {
        let ratio = ours / reference
        rows.append([
            name, format(ours, digits: 1), format(reference, digits: 1), format(ratio),
            goalRatio.map { "<= \(format($0))x" } ?? "-", goalRatio.map { ratio <= $0 ? "met" : "NOT MET" } ?? "",
        ])
    }

    /// A memory row; values in megabytes, the goal a ceiling on ours alone (none: "-").
    mutating func addMemory(_ name: String, ours: Double, reference: Double, goalMegabytes: Double?) {
        rows.append([
            name, format(ours, digits: 1) + " MB", format(reference, digits: 1) + " MB", format(ours / reference),
            goalMegabytes.map { "<= \(format($0, digits: 0)) MB" } ?? "-",
            goalMegabytes.map { ours <= $0 ? "met" : "NOT MET" } ?? "",
        ])
    }

    func print() {
        let header = ["case", "ours (ms)", "libvips (ms)", "ratio", "goal", "result"]
        let all = [header] + rows
        let widths = header.indices.map { index in all.map { $0[index].count }.max() ?? 0 }
        for (number, row) in all.enumerated() {
            Swift.print(row.indices.map { column(row[$0], widths[$0]) }.joined(separator: " | "))
            if number == 0 { Swift.print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "-|-")) }
        }
    }
}
