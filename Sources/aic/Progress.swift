/// Progress of a batch on stderr: a bar redrawn in place on a terminal, one plain line per item
/// (`[3/20] photo.jpg`) when stderr goes to a file or a pipe, where a bar would be noise.
struct Progress {
    let total: Int
    let isTerminal: Bool
    private(set) var done = 0
    /// The bar's width in characters; with the counts and a name it fits an 80-column terminal.
    private static let barWidth = 30

    init(total: Int, isTerminal: Bool = Console.stderrIsTerminal) {
        self.total = total
        self.isTerminal = isTerminal
    }

    /// Reports that the item `name` finished, well or not.
    mutating func advance(_ name: String, failed: Bool) {
        done += 1
        let outcome = failed ? " (failed)" : ""
        guard isTerminal else {
            Console.error("[\(done)/\(total)] \(name)\(outcome)\n")
            return
        }
        let filled = total == 0 ? Self.barWidth : done * Self.barWidth / total
        let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: Self.barWidth - filled)
        let label = name.count > 30 ? name.prefix(29) + "~" : Substring(name)
        // \r and "erase line" redraw in place; the name changes length from item to item.
        Console.error("\r\u{1B}[2K[\(bar)] \(done)/\(total) \(label)\(outcome)")
    }

    /// Clears the bar so that what follows starts on a clean line.
    func finish() {
        if isTerminal { Console.error("\r\u{1B}[2K") }
    }
}
