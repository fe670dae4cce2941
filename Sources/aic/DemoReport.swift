import Foundation

/// What the demo prints: a line per image in each pass, then one table row per pass.
struct DemoReport {
    /// What each sample is (`large photo`, `EXIF orientation 6`), by file name.
    private let notes: [String: String]

    init(samples: SampleSet) {
        notes = Dictionary(uniqueKeysWithValues: samples.items.map { ($0.name, $0.note) })
    }

    /// `  photo.jpg  photo  size 2400x1600 before pixels (xattr)  from disk  -> 320x213`.
    func printRows(of pass: DemoPass) {
        for row in pass.rows {
            let size =
                row.sizeBefore.map { "size \($0) before pixels (\(row.sizeFrom))" } ?? "size unknown before pixels"
            let columns = [
                pad(row.name, 15), pad(notes[row.name] ?? "", 18), pad(size, 38), pad("from \(row.imageFrom)", 12),
                "-> \(row.thumbnail)",
            ]
            Console.out("  " + columns.joined(separator: " "))
        }
    }

    /// One row per pass: the process, how many sizes were known before pixels and from where, which
    /// tiers served the images, and the decodes, bytes and time that cost.
    func printTable(_ passes: [DemoPass]) {
        Console.out("")
        let header = [
            pad("pass", 11), pad("process", 8), pad("sizes before pixels", 22), pad("images from", 14),
            pad("decodes", 8), pad("fetched", 9), "time",
        ]
        Console.out(header.joined(separator: " "))
        for pass in passes {
            let known = pass.rows.filter { $0.sizeBefore != nil }
            let sizes =
                "\(known.count) of \(pass.rows.count)" + (known.isEmpty ? "" : " (\(tally(known.map(\.sizeFrom))))")
            let columns = [
                pad(pass.label, 11), pad(String(pass.processID), 8), pad(sizes, 22),
                pad(tally(pass.rows.map(\.imageFrom)), 14), pad(String(pass.decodes), 8),
                pad(Formatted.bytes(pass.bytesFetched), 9), String(format: "%.0f ms", pass.milliseconds),
            ]
            Console.out(columns.joined(separator: " "))
        }
    }

    /// `disk 5, http 1`: each value with how often it occurs, in order of first appearance.
    private func tally(_ values: [String]) -> String {
        var order: [String] = []
        var counts: [String: Int] = [:]
        for value in values {
            if counts[value] == nil { order.append(value) }
            counts[value, default: 0] += 1
        }
        return order.map { "\($0) \(counts[$0]!)" }.joined(separator: ", ")
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
    }
}
