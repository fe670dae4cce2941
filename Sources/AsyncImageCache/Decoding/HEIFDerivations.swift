import Foundation

/// The images an HEIF or AVIF file makes from other items, checked before libheif reads it.
///
/// libheif 1.15 follows an image's references while it decodes: the inputs of a derived image
/// (`dimg`: the tiles of a `grid`, the layers of an `iovl`, the source of an `iden`) and its alpha
/// (an `auxl` auxiliary image). Crafted references make it abort the process (an `iovl` or `iden` made
/// from an item that is not an image fails an assertion; found by fuzzing), overflow the stack
/// (images that are, through their inputs or alphas, made from themselves), or decode for hours
/// (inputs shared along a chain, each decoded once per use). So a file is refused when:
/// - it has more than one top-level `meta` box (libheif reads the last, the other readers the first);
/// - `iinf` declares an item twice (libheif keeps the first declaration, a careless reader the last);
/// - a reference box's declared size is not what its contents take (libheif reads the contents
///   whatever the size says, so a box could hide references from a reader that trusts the size);
/// - a derived image is made from an item that is not an image;
/// - the references form a cycle;
/// - decoding one image would decode more than ``decodeLimit`` images;
/// - an image is made through more than ``depthLimit`` levels of images (libheif decodes a grid's tiles
///   by recursion: a chain of 3,600 grids of one tile each, 200 KB, overflowed a thread's 8 MiB stack).
enum HEIFDerivations {
    /// The item types libheif 1.15 takes for images.
    static let imageTypes: Set<String> = ["hvc1", "av01", "vvc1", "grid", "iovl", "iden"]

    /// The most images decoding one image may decode, itself, its inputs and their alphas included,
    /// each as often as it is used: 48 for an iPhone photo's grid, 768 for a 200-megapixel one of
    /// 512-pixel tiles.
    static let decodeLimit = 4096

    /// The most levels an image may be made through: itself, its inputs, theirs, and so on, alphas
    /// included. A camera's photo takes 3 (a grid, its tiles, their alpha); an `iden` or `iovl` over it 4.
    static let depthLimit = 32

    /// Why `data` must not reach libheif; `nil` when its references are sound, or when its `meta` box
    /// is missing or incomplete (libheif then reports that itself). Item information or references
    /// that do not parse inside a complete `meta` are a reason too: libheif reads past such damage.
    static func problem(in data: Data) -> String? {
        let file = HEIFBoxes(bytes: HeaderBytes(data, format: nil))
        let metas = metaBoxes(file)
        guard let meta = metas.first else { return nil }
        guard metas.count == 1 else { return "the file has \(metas.count) meta boxes" }
        let types: [Int: String]
        let references: [HEIFBoxes.Reference]
        do {
            types = try file.itemTypes(metaContent: meta.contentStart + 4, metaEnd: meta.end)
            references = try file.references(metaContent: meta.contentStart + 4, metaEnd: meta.end)
        } catch {
            if case .corrupt(let detail) = error.reason { return "its items cannot be read: \(detail)" }
            return nil
        }
        for reference in references where reference.type == "dimg" {
            for input in reference.to where !imageTypes.contains(types[input] ?? "") {
                return "derived image \(reference.from) is made from item \(input), which is not an image"
            }
        }
        return graphProblem(nextDecodes(references))
    }

    /// How many times the pixel budget the images that decoding the primary image decodes may add up to: its
    /// own canvas and its inputs and alphas, each as often as it is used. A grid's tiles add up to
    /// about its canvas (their padding past its edges a little more), and so do their alphas: a file within
    /// the budget stays far below, where one tile coded larger than it declares and used a thousand times
    /// over (libheif lays tiles out by what they declare) decodes a thousand times the budget.
    static let pixelBudgetFactor = 4

    /// The pixels libheif 1.15 decodes for the primary image of `data`: the size of every image it decodes on
    /// the way (see ``HEIFCodedSize/perItem(in:)``), each as often as it is used, itself, its inputs and their
    /// alphas included. `nil` without a primary item, or when the items or references cannot be read or
    /// form a cycle (``problem(in:)`` reports those). With `item`, the pixels decoding that item decodes
    /// instead (a thumbnail).
    static func decodedPixels(in data: Data, item: Int? = nil) -> Int? {
        let file = HEIFBoxes(bytes: HeaderBytes(data, format: nil))
        guard let meta = metaBoxes(file).first,
            let pitm = try? file.child("pitm", from: meta.contentStart + 4, to: meta.end),
            let primaryItem = try? file.primaryItemID(pitm),
            let references = try? file.references(metaContent: meta.contentStart + 4, metaEnd: meta.end)
        else { return nil }
        let primary = item ?? primaryItem
        let sizes = HEIFCodedSize.perItem(in: data)
        // Saturating: past this no budget is near, and the sums cannot overflow.
        let ceiling = 1 << 52
        var pixels: [Int: Int] = [:]  // of finished items
        // Of the auxiliary images only alpha planes are decoded; properties that cannot be read count them all.
        let alphas = try? file.alphaItems(metaContent: meta.contentStart + 4, metaEnd: meta.end)
        let next = nextDecodes(references, alphas: alphas)
        var path: [(item: Int, child: Int)] = [(primary, 0)]
        var onPath: Set<Int> = [primary]
        // Depth first without recursion, as graphProblem(_:) walks.
        while let (item, child) = path.last {
            let children = next[item] ?? []
            if child < children.count {
                path[path.count - 1].child += 1
                let target = children[child]
                guard !onPath.contains(target) else { return nil }
                if pixels[target] == nil {
                    path.append((target, 0))
                    onPath.insert(target)
                }
                continue
            }
            let own = min(sizes[item]?.pixelCount ?? 0, ceiling)
            pixels[item] = children.reduce(own) { min($0 + (pixels[$1] ?? 0), ceiling) }
            path.removeLast()
            onPath.remove(item)
        }
        return pixels[primary]
    }

    /// The top-level `meta` boxes of `file`, walked until the data or the box sizes give out (libheif stops
    /// at the same place).
    private static func metaBoxes(_ file: HEIFBoxes) -> [HEIFBoxes.Box] {
        var metas: [HEIFBoxes.Box] = []
        var offset = 0
        while offset < file.bytes.count, let box = try? file.box(at: offset, parentEnd: file.bytes.count) {
            if box.type == "meta" { metas.append(box) }
            offset = box.end
        }
        return metas
    }

    /// What decoding each item decodes next, by the references: a derived image's inputs (`dimg`), an
    /// image's auxiliary images (`auxl`, from the auxiliary image to its image): those in `alphas` when
    /// given (libheif 1.15 decodes an image's alpha plane with it, not its depth map or other auxiliary
    /// images), every one when `nil`.
    private static func nextDecodes(_ references: [HEIFBoxes.Reference], alphas: Set<Int>? = nil) -> [Int: [Int]] {
        var next: [Int: [Int]] = [:]
        for reference in references {
            switch reference.type {
            case "dimg": next[reference.from, default: []] += reference.to
            case "auxl" where alphas?.contains(reference.from) ?? true:
                for image in reference.to { next[image, default: []].append(reference.from) }
            default: break
            }
        }
        return next
    }

    /// A cycle in `next`, or an item whose decode would take more than ``decodeLimit`` decodes or go
    /// through more than ``depthLimit`` levels.
    private static func graphProblem(_ next: [Int: [Int]]) -> String? {
        // Depth first, without recursion (the input is hostile): an item met again while still on the
        // path closes a cycle; items finish after everything they lead to, so counts add up in order.
        var decodes: [Int: Int] = [:]  // of finished items
        var depths: [Int: Int] = [:]  // of finished items: the levels decoding each goes through
        for start in next.keys.sorted() where decodes[start] == nil {
            var path: [(item: Int, child: Int)] = [(start, 0)]
            var onPath: Set<Int> = [start]
            while let (item, child) = path.last {
                let children = next[item] ?? []
                if child < children.count {
                    path[path.count - 1].child += 1
                    let target = children[child]
                    if onPath.contains(target) {
                        return "image \(target) is made, through its inputs or alpha, from itself"
                    }
                    if decodes[target] == nil {
                        path.append((target, 0))
                        onPath.insert(target)
                    }
                    continue
                }
                // Saturating: past the limit the exact count does not matter.
                let count = children.reduce(1) { min($0 + (decodes[$1] ?? 1), decodeLimit + 1) }
                guard count <= decodeLimit else {
                    return "image \(item) would decode more than \(decodeLimit) images"
                }
                decodes[item] = count
                let depth = 1 + children.reduce(0) { max($0, depths[$1] ?? 1) }
                guard depth <= depthLimit else {
                    return "image \(item) is made through more than \(depthLimit) levels of images"
                }
                depths[item] = depth
                path.removeLast()
                onPath.remove(item)
            }
        }
        return nil
    }
}

extension HEIFBoxes {
    /// The `auxC` types libheif 1.15 takes for an alpha plane.
    static let alphaAuxiliaryTypes: Set<String> = [
        "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha", "urn:mpeg:hevc:2015:auxid:1", "urn:mpeg:avc:2015:auxid:1",
    ]

    /// The items whose first associated `auxC` property names an alpha plane (see
    /// ``alphaAuxiliaryTypes``), as libheif reads it: its type is the text up to its first zero byte.
    func alphaItems(metaContent: Int, metaEnd: Int) throws(ImageDecodingError) -> Set<Int> {
        guard let iprp = try child("iprp", from: metaContent, to: metaEnd),
            let ipco = try child("ipco", from: iprp.contentStart, to: iprp.end)
        else { return [] }
        let properties = try children(from: ipco.contentStart, to: ipco.end)
        var alphas: Set<Int> = []
        for (item, indices) in try allAssociations(from: iprp.contentStart, to: iprp.end) {
            guard
                let auxC = indices.lazy.filter({ $0 >= 1 && $0 <= properties.count }).map({ properties[$0 - 1] })
                    .first(where: { $0.type == "auxC" })
            else { continue }
            var type: [UInt8] = []
            // FullBox version and flags, then the type.
            for offset in (auxC.contentStart + 4)..<max(auxC.contentStart + 4, auxC.end) {
                let byte = try bytes.byte(at: offset)
                if byte == 0 { break }
                type.append(byte)
            }
            if Self.alphaAuxiliaryTypes.contains(String(decoding: type, as: UTF8.self)) { alphas.insert(item) }
        }
        return alphas
    }

    /// A reference box of `iref`: item `from` refers, as `type` says, to the items `to`.
    struct Reference {
        var type: String
        var from: Int
        var to: [Int]
    }

    /// The reference boxes of `iref`, read as libheif reads them: one after another, each a box header,
    /// the referring item, a count and the items, whatever size its header declares. A declared size
    /// that differs from that is corrupt, since a reader trusting it would see other references.
    func references(metaContent: Int, metaEnd: Int) throws(ImageDecodingError) -> [Reference] {
        guard let iref = try child("iref", from: metaContent, to: metaEnd) else { return [] }
        // FullBox; version 0 writes item IDs in 16 bits, 1 in 32.
        let idLength = try bytes.byte(at: iref.contentStart) == 0 ? 2 : 4
        var offset = iref.contentStart + 4
        func field(_ length: Int) throws(ImageDecodingError) -> Int {
            guard offset + length <= iref.end else { throw bytes.corrupt("a reference runs past its iref box") }
            defer { offset += length }
            let value = try bytes.unsigned(at: offset, length: length, bigEndian: true)
            guard value <= UInt64(Int32.max) else { throw bytes.corrupt("reference field of \(value)") }
            return Int(value)
        }
        var references: [Reference] = []
        // Each reference takes at least 12 bytes, so the walk ends.
        while offset < iref.end {
            let start = offset
            var size = try field(4)
            guard offset + 4 <= iref.end else { throw bytes.corrupt("a reference runs past its iref box") }
            let type = try bytes.fourCC(at: offset)
            offset += 4
            if size == 1 { size = try field(8) }
            if type == "uuid" { offset += 16 }
            let from = try field(idLength)
            let count = try field(2)
            var to: [Int] = []
            for _ in 0..<count { to.append(try field(idLength)) }
            guard size == offset - start else {
                throw bytes.corrupt("reference box '\(type)' declares \(size) bytes and holds \(offset - start)")
            }
            references.append(Reference(type: type, from: from, to: to))
        }
        return references
    }
}
