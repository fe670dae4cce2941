import Foundation

/// The derived images of an HEIF or AVIF file (`grid`, `iovl`, `iden`), checked before libheif reads
/// it: libheif 1.15 aborts the process on an assertion when a derived image is made from an item
/// that is not an image (found by fuzzing), and hangs on one that is made, through its inputs, from
/// itself. Both come from the file's `dimg` references, which this reads from `iinf` and `iref`.
enum HEIFDerivations {
    /// The item types libheif 1.15 takes for images.
    static let imageTypes: Set<String> = ["hvc1", "av01", "grid", "iovl", "iden"]

    /// Why `data` must not reach libheif; `nil` when its derivations are sound, or when its `meta` box
    /// is missing or incomplete (libheif then reports that itself). Item information or references that
    /// do not parse inside a complete `meta` are a reason too: libheif reads past such damage.
    static func problem(in data: Data) -> String? {
        let file = HEIFBoxes(bytes: HeaderBytes(data, format: nil))
        guard let meta = try? file.child("meta", from: 0, to: file.bytes.count) else { return nil }
        let types: [Int: String]
        let references: [(derived: Int, inputs: [Int])]
        do {
            types = try file.itemTypes(metaContent: meta.contentStart + 4, metaEnd: meta.end)
            references = try file.derivations(metaContent: meta.contentStart + 4, metaEnd: meta.end)
        } catch {
            if case .corrupt(let detail) = error.reason { return "its items cannot be read: \(detail)" }
            return nil
        }
        for (derived, inputs) in references {
            for input in inputs where !imageTypes.contains(types[input] ?? "") {
                return "derived image \(derived) is made from item \(input), which is not an image"
            }
        }
        return cycle(in: references).map { "derived image \($0) is made, through its inputs, from itself" }
    }

    /// An item on a cycle of `references`, if they have one.
    private static func cycle(in references: [(derived: Int, inputs: [Int])]) -> Int? {
        var inputs: [Int: [Int]] = [:]
        for (derived, items) in references { inputs[derived, default: []] += items }
        // Depth first, without recursion: an item met again while still on the path closes a cycle.
        var finished: Set<Int> = []
        for start in inputs.keys where !finished.contains(start) {
            var path: [(item: Int, next: Int)] = [(start, 0)]
            var onPath: Set<Int> = [start]
            while let (item, next) = path.last {
                let children = inputs[item] ?? []
                guard next < children.count else {
                    path.removeLast()
                    onPath.remove(item)
                    finished.insert(item)
                    continue
                }
                path[path.count - 1].next += 1
                let child = children[next]
                if onPath.contains(child) { return child }
                if !finished.contains(child) {
                    path.append((child, 0))
                    onPath.insert(child)
                }
            }
        }
        return nil
    }
}

extension HEIFBoxes {
    /// The items `iinf` declares, by ID, with their types (empty for `infe` versions 0 and 1, which
    /// have none).
    func itemTypes(metaContent: Int, metaEnd: Int) throws(ImageDecodingError) -> [Int: String] {
        guard let iinf = try child("iinf", from: metaContent, to: metaEnd) else { return [:] }
        // iinf: FullBox, entry count (16 or 32 bits), then infe boxes: FullBox, item ID, protection, type.
        let entriesStart = iinf.contentStart + 4 + (try bytes.byte(at: iinf.contentStart) == 0 ? 2 : 4)
        var types: [Int: String] = [:]
        for infe in try children(from: entriesStart, to: iinf.end) where infe.type == "infe" {
            let version = try bytes.byte(at: infe.contentStart)
            let idLength = version >= 3 ? 4 : 2
            let id = Int(try bytes.unsigned(at: infe.contentStart + 4, length: idLength, bigEndian: true))
            types[id] = version >= 2 ? try bytes.fourCC(at: infe.contentStart + 4 + idLength + 2) : ""
        }
        return types
    }

    /// The `dimg` references of `iref`: each derived image with the items it is made from, in order.
    func derivations(metaContent: Int, metaEnd: Int) throws(ImageDecodingError) -> [(derived: Int, inputs: [Int])] {
        guard let iref = try child("iref", from: metaContent, to: metaEnd) else { return [] }
        // FullBox; version 0 writes item IDs in 16 bits, 1 in 32.
        let idLength = try bytes.byte(at: iref.contentStart) == 0 ? 2 : 4
        var references: [(derived: Int, inputs: [Int])] = []
        for reference in try children(from: iref.contentStart + 4, to: iref.end) where reference.type == "dimg" {
            var offset = reference.contentStart
            func id() throws(ImageDecodingError) -> Int {
                defer { offset += idLength }
                return Int(try bytes.unsigned(at: offset, length: idLength, bigEndian: true))
            }
            let derived = try id()
            let count = try bytes.uint16BE(at: offset)
            offset += 2
            // Each ID read is bounds-checked, so a lying count stops at the end of the data.
            var inputs: [Int] = []
            for _ in 0..<count where offset + idLength <= reference.end { inputs.append(try id()) }
            references.append((derived, inputs))
        }
        return references
    }
}
