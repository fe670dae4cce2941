/// The ISO-BMFF box walking behind ``ImageHeader/parseHEIF(_:)``.
struct HEIFBoxes {
    /// A box's type and where its content lies.
    struct Box {
        var type: String
        var contentStart: Int
        var end: Int
    }

    let bytes: HeaderBytes

    /// The box whose header starts at `offset` inside a parent that ends at `parentEnd`.
    func box(at offset: Int, parentEnd: Int) throws(ImageDecodingError) -> Box {
        let size32 = try bytes.uint32BE(at: offset)
        let type = try bytes.fourCC(at: offset + 4)
        var headerSize = 8
        var size = size32
        if size32 == 0 {
            size = parentEnd - offset  // the box runs to the end of its parent
        } else if size32 == 1 {
            let large = try bytes.unsigned(at: offset + 8, length: 8, bigEndian: true)
            guard large <= UInt64(Int32.max) * 1024 else { throw bytes.corrupt("box '\(type)' of \(large) bytes") }
            size = Int(large)
            headerSize = 16
        }
        guard size >= headerSize, size <= parentEnd - offset else {
            throw bytes.corrupt("box '\(type)' of \(size) bytes at byte \(offset)")
        }
        return Box(type: type, contentStart: offset + headerSize, end: offset + size)
    }

    /// The first box of `type` between `start` and `end`, reading only box headers on the way.
    func child(_ type: String, from start: Int, to end: Int) throws(ImageDecodingError) -> Box? {
        var offset = start
        // Every box is at least 8 bytes long, so the walk always moves on and ends.
        while offset < end {
            let box = try box(at: offset, parentEnd: end)
            if box.type == type { return box }
            offset = box.end
        }
        return nil
    }

    /// Every box between `start` and `end`; at most one per 8 bytes actually present.
    func children(from start: Int, to end: Int) throws(ImageDecodingError) -> [Box] {
        var boxes: [Box] = []
        var offset = start
        while offset < end {
            let box = try box(at: offset, parentEnd: end)
            boxes.append(box)
            offset = box.end
        }
        return boxes
    }

    /// How the bytes hold the top-level boxes up to the end of the first `meta` box, which libheif reads before
    /// anything else.
    enum TopLevelBoxes {
        /// The bytes end inside `meta`, or inside a box before it, or after whole boxes with no `meta` among them
        /// (as a file cut at a box's end; the header reader, which cannot know where a file ends either, waits
        /// for one too).
        case endBeforeMeta
        /// A box header before the end of `meta` is damaged (a size under 8, or past any file).
        case damagedBeforeMeta
        /// `meta` is all there, or a box before it runs to the end of the file (size 0), after which none can come.
        case throughMeta
    }

    /// How the bytes hold the top-level boxes up to the end of the first `meta` box (``TopLevelBoxes``).
    func topLevelBoxes() -> TopLevelBoxes {
        var offset = 0
        while offset < bytes.count {
            let box: Box
            do {
                box = try self.box(at: offset, parentEnd: .max)
            } catch {
                // The bytes end inside a box header, or it is damaged.
                return error.reason == .truncated ? .endBeforeMeta : .damagedBeforeMeta
            }
            // With no parent end to go by, a box of size 0 ends at .max: the end of the file, whatever it holds.
            if box.end == .max { return .throughMeta }
            if box.end > bytes.count { return .endBeforeMeta }
            if box.type == "meta" { return .throughMeta }
            offset = box.end
        }
        return .endBeforeMeta
    }

    /// What the header and the decoder say of a top-level `meta` box of size 0.
    static let metaOfSizeZero = "meta box of size 0 (to the end of the file)"

    /// Whether the first top-level `meta` box has size 0, which makes it run to the end of the file; `false` when
    /// there is none or the bytes end before its header.
    func metaRunsToTheEnd() -> Bool {
        // Walked without an end (the length of a prefix is not the file's), a box of size 0 ends at .max.
        (try? child("meta", from: 0, to: .max))?.end == .max
    }

    /// Runs `body` over boxes that must be complete: a read past their end means a wrong length
    /// inside the file, not missing data, so `.truncated` becomes `.corrupt`.
    func completeBoxes<T>(_ body: () throws(ImageDecodingError) -> T) throws(ImageDecodingError) -> T {
        do {
            return try body()
        } catch  where error.reason == .truncated {
            throw bytes.corrupt("a box's content is shorter than its fields")
        }
    }

    /// The item ID in a `pitm` FullBox: 16 bits in version 0, 32 bits after.
    func primaryItemID(_ pitm: Box) throws(ImageDecodingError) -> Int {
        let version = try bytes.byte(at: pitm.contentStart)
        return version == 0
            ? try bytes.uint16BE(at: pitm.contentStart + 4) : try bytes.uint32BE(at: pitm.contentStart + 4)
    }

    /// The 1-based `ipco` indices associated with `item` by the `ipma` boxes between `start` and `end`, in order.
    func associations(of item: Int, from start: Int, to end: Int) throws(ImageDecodingError) -> [Int] {
        var found: [Int]?
        try walkAssociations(from: start, to: end) { itemID, indices in
            guard itemID == item else { return true }
            found = indices
            return false
        }
        return found ?? []
    }

    /// The 1-based `ipco` indices associated with every item by the `ipma` boxes between `start` and `end`,
    /// in one walk; an item listed twice keeps its first entry, as ``associations(of:from:to:)`` reads it.
    func allAssociations(from start: Int, to end: Int) throws(ImageDecodingError) -> [Int: [Int]] {
        var all: [Int: [Int]] = [:]
        try walkAssociations(from: start, to: end) { item, indices in
            if all[item] == nil { all[item] = indices }
            return true
        }
        return all
    }

    /// Calls `visit` with each entry of the `ipma` boxes between `start` and `end`, its item ID and its
    /// indices, until `visit` returns false.
    private func walkAssociations(
        from start: Int, to end: Int, _ visit: (Int, [Int]) -> Bool
    ) throws(ImageDecodingError) {
        for ipma in try children(from: start, to: end) where ipma.type == "ipma" {
            let version = try bytes.byte(at: ipma.contentStart)
            let wideIndices = try bytes.byte(at: ipma.contentStart + 3) & 1 == 1
            let entryCount = try bytes.uint32BE(at: ipma.contentStart + 4)
            var offset = ipma.contentStart + 8
            // Each entry takes at least three bytes, so a lying count runs out of box quickly.
            var remaining = entryCount
            while remaining > 0 && offset < ipma.end {
                remaining -= 1
                let itemID = version == 0 ? try bytes.uint16BE(at: offset) : try bytes.uint32BE(at: offset)
                offset += version == 0 ? 2 : 4
                let count = Int(try bytes.byte(at: offset))
                offset += 1
                var indices: [Int] = []
                for _ in 0..<count {
                    // The top bit marks the property as essential; the rest is the index.
                    if wideIndices {
                        indices.append(try bytes.uint16BE(at: offset) & 0x7FFF)
                        offset += 2
                    } else {
                        indices.append(Int(try bytes.byte(at: offset) & 0x7F))
                        offset += 1
                    }
                }
                guard offset <= ipma.end else { throw bytes.corrupt("ipma entry runs past its box") }
                guard visit(itemID, indices) else { return }
            }
        }
    }

    /// The width and height in an `ispe` FullBox.
    func spatialExtent(_ ispe: Box) throws(ImageDecodingError) -> PixelSize {
        guard ispe.end - ispe.contentStart >= 12 else { throw bytes.corrupt("ispe of the wrong length") }
        return PixelSize(
            width: try bytes.uint32BE(at: ispe.contentStart + 4),
            height: try bytes.uint32BE(at: ispe.contentStart + 8))
    }

    /// The largest `ispe` extent among `properties`, if any.
    func largestExtent(among properties: [Box]) throws(ImageDecodingError) -> PixelSize? {
        var largest: PixelSize?
        for property in properties where property.type == "ispe" {
            let size = try spatialExtent(property)
            if size.pixelCount > largest?.pixelCount ?? -1 { largest = size }
        }
        return largest
    }

    /// The first of `irot`, `imir` and `clap` that `properties` (an item's, as associated with it) hold more
    /// than once, the same property associated twice included; `nil` when none is repeated.
    ///
    /// libheif 1.15.1 as Debian's security update (1.15.1-1+deb12u3, GHSA-7qm8-hj35-269r) ships it refuses to
    /// decode such an item, its transformations ignored or not: "Multiple irot, imir, or clap properties
    /// associated with one item". Earlier builds applied them all, one after another.
    static func repeatedTransformation(among properties: [Box]) -> String? {
        var seen: Set<String> = []
        for property in properties where ["irot", "imir", "clap"].contains(property.type) {
            guard seen.insert(property.type).inserted else { return property.type }
        }
        return nil
    }

    /// The EXIF orientation equal to the `irot` (quarter turns anticlockwise) and `imir` (axis 0: top and
    /// bottom exchanged; 1: left and right, per ISO/IEC 23008-12:2022) among `properties`, applied in the
    /// order they are associated with the item, as HEIF has it (6.3) and libheif does. MIAF asks writers
    /// for the rotation first, but a HEIF file may mirror first, which turns the other way.
    func orientation(from properties: [Box]) throws(ImageDecodingError) -> ImageOrientation {
        // What the properties so far amount to: a rotation, then a mirror or none.
        var quarterTurns = 0
        var mirrorAxis: Int?
        for property in properties {
            if property.type == "irot" {
                let turns = Int(try bytes.byte(at: property.contentStart) & 0x03)
                // A mirror then a rotation is the rotation then the mirror about the turned axis.
                quarterTurns = (quarterTurns + turns) % 4
                if turns % 2 == 1, let axis = mirrorAxis { mirrorAxis = 1 - axis }
            }
            if property.type == "imir" {
                let axis = Int(try bytes.byte(at: property.contentStart) & 0x01)
                switch mirrorAxis {
                case nil: mirrorAxis = axis
                case axis?: mirrorAxis = nil  // the same mirror twice undoes itself
                default:
                    // Mirrors about both axes make a half turn.
                    mirrorAxis = nil
                    quarterTurns = (quarterTurns + 2) % 4
                }
            }
        }
        // Rows: quarter turns anticlockwise. Columns: no mirror, axis 0 (flip vertically), axis 1 (horizontally).
        let table: [[ImageOrientation]] = [
            [.up, .downMirrored, .upMirrored],
            [.left, .leftMirrored, .rightMirrored],
            [.down, .upMirrored, .downMirrored],
            [.right, .rightMirrored, .leftMirrored],
        ]
        return table[quarterTurns][mirrorAxis.map { $0 + 1 } ?? 0]
    }

    /// The items `iinf` declares, by ID, with their types (empty for `infe` versions 0 and 1, which
    /// have none). An item declared twice is corrupt: readers disagree on which declaration counts.
    func itemTypes(metaContent: Int, metaEnd: Int) throws(ImageDecodingError) -> [Int: String] {
        guard let iinf = try child("iinf", from: metaContent, to: metaEnd) else { return [:] }
        // iinf: FullBox, entry count (16 or 32 bits), then infe boxes: FullBox, item ID, protection, type.
        let entriesStart = iinf.contentStart + 4 + (try bytes.byte(at: iinf.contentStart) == 0 ? 2 : 4)
        var types: [Int: String] = [:]
        for infe in try children(from: entriesStart, to: iinf.end) where infe.type == "infe" {
            let version = try bytes.byte(at: infe.contentStart)
            let idLength = version >= 3 ? 4 : 2
            let id = Int(try bytes.unsigned(at: infe.contentStart + 4, length: idLength, bigEndian: true))
            guard types[id] == nil else { throw bytes.corrupt("item \(id) is declared twice") }
            types[id] = version >= 2 ? try bytes.fourCC(at: infe.contentStart + 4 + idLength + 2) : ""
        }
        return types
    }
}
