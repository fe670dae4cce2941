#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A primary `grid` or `iovl` item without an `ispe` takes its size from its description (its `iinf` and
/// `iloc` entries, and its data in `idat` or in the file). A download cut short inside that description is
/// `.truncated`, not the size of a tile's `ispe`; a description libheif refuses is the error its decode gives.
@Suite("HEIF grid and overlay descriptions cut short or damaged")
struct HEIFDerivedImageDescriptionTests {
    enum Layout: String, CustomStringConvertible, CaseIterable {
        /// As grid.heic has it: `iloc` and `iinf` before `iprp`, the description in `idat` at the end of `meta`.
        case inItemData
        /// `iinf` and `iloc` moved after `iprp` (then `idat`), so the properties are complete before them.
        case afterTheProperties
        /// `iinf`, `iloc`, `idat` and then `iref`, which lists the grid's tiles, moved after `iprp`.
        case referencesLast
        /// The description in an `mdat` of its own at the end of the file (construction method 0).
        case atTheEndOfTheFile
        var description: String { rawValue }
    }

    /// `name` (grid.heic or overlay.heic, both 96x64) with the derived image's own `ispe` (the last of 96x64;
    /// overlay.heic's layer has one too) replaced in place by a `free` box.
    static func withoutDerivedImageExtent(_ name: String) throws -> Data {
        var bytes = [UInt8](try Fixtures.data("heif", name))
        let ispe: [UInt8] = [0, 0, 0, 20] + Array("ispe".utf8) + [0, 0, 0, 0, 0, 0, 0, 96, 0, 0, 0, 64]
        let start = try #require(
            (0...(bytes.count - ispe.count)).last { bytes[$0..<($0 + ispe.count)].elementsEqual(ispe) })
        bytes.replaceSubrange(
            start..<(start + ispe.count), with: [0, 0, 0, 20] + Array("free".utf8) + [UInt8](repeating: 0, count: 12))
        return Data(bytes)
    }

    /// The top-level boxes of `bytes` from `start` to `end`, as (offset, type, size); sizes under 4 GiB.
    static func boxes(_ bytes: [UInt8], from start: Int, to end: Int) -> [(offset: Int, type: String, size: Int)] {
        var boxes: [(offset: Int, type: String, size: Int)] = []
        var offset = start
        while offset + 8 <= end {
            let size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            boxes.append((offset, String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self), size))
            offset += size
        }
        return boxes
    }

    /// grid.heic without the grid's `ispe`, laid out as `layout` says, and the bytes to cut it in: from the
    /// first of the boxes that describe the grid (`iloc` or `iinf`) to the end of its data.
    static func grid(_ layout: Layout) throws -> (data: Data, description: Range<Int>) {
        var bytes = [UInt8](try withoutDerivedImageExtent("grid.heic"))
        let meta = try #require(boxes(bytes, from: 0, to: bytes.count).first { $0.type == "meta" })
        var children = boxes(bytes, from: meta.offset + 12, to: meta.offset + meta.size)
        func box(_ type: String) throws -> (offset: Int, type: String, size: Int) {
            try #require(children.first { $0.type == type })
        }
        switch layout {
        case .inItemData:
            let idat = try box("idat")
            return (Data(bytes), (try box("iloc")).offset..<(idat.offset + idat.size))
        case .afterTheProperties, .referencesLast:
            // Same boxes, same meta size: mdat does not move, so iloc's file offsets still hold.
            let moved = layout == .referencesLast ? ["iinf", "iloc", "idat", "iref"] : ["iinf", "iloc", "idat"]
            children = children.filter { !moved.contains($0.type) } + (try moved.map(box))
            var content: [UInt8] = []
            for child in children { content += bytes[child.offset..<(child.offset + child.size)] }
            bytes.replaceSubrange((meta.offset + 12)..<(meta.offset + meta.size), with: content)
            let reordered = boxes(bytes, from: meta.offset + 12, to: meta.offset + meta.size)
            let iinf = try #require(reordered.first { $0.type == "iinf" })
            let last = try #require(reordered.first { $0.type == moved.last })
            return (Data(bytes), iinf.offset..<(last.offset + last.size))
        case .atTheEndOfTheFile:
            // The grid (item 5) is iloc's last entry: ID, construction method, data reference, extent count,
            // then a 32-bit offset and length. Method 1 (idat) becomes 0: the offset counts from the file.
            let iloc = try box("iloc")
            let entry = iloc.offset + iloc.size - 16
            #expect(Array(bytes[entry..<(entry + 4)]) == [0, 5, 0, 1])
            bytes[entry + 3] = 0
            let start = bytes.count + 8
            bytes.replaceSubrange(
                (entry + 8)..<(entry + 12), with: (0..<4).reversed().map { UInt8(start >> (8 * $0) & 0xFF) })
            let idat = try box("idat")
            bytes += [0, 0, 0, 16] + Array("mdat".utf8) + bytes[(idat.offset + 8)..<(idat.offset + 16)]
            return (Data(bytes), (start - 8)..<bytes.count)
        }
    }

    /// Before, the header read 48x32 (a tile's ispe) for 16 cuts inside `idat` (1030-1045 bytes of 6285),
    /// for 113 once `iinf`, `iloc` and `idat` follow the properties (its last byte of `iinf`, all of `iloc` and
    /// `idat`: 933-1045) and for 16 inside the `mdat` at the end (6285-6300 of 6301). With `iref` last, the
    /// header read 96x64 for the 32 cuts inside it (1014-1045), before the grid's tiles were counted.
    @Test(arguments: Layout.allCases)
    func everyCutInsideAGridsDescriptionIsTruncated(layout: Layout) throws {
        let (data, description) = try Self.grid(layout)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        // grid.heic's tiles are coded 64x64 under an ispe of 48x32, which libheif 1.22 and later refuse.
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            #expect(throws: HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif)) {
                try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            }
        } else {
            let bitmap = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            #expect(bitmap.pixelSize == header.storedSize)
        }
        for length in description {
            #expect(throws: ImageDecodingError(format: .heif, reason: .truncated), "prefix of \(length) bytes") {
                try ImageHeader.parse(data.prefix(length))
            }
        }
    }

    /// The reason's kind, without its message: libheif's words and the header's differ.
    static func kind(_ reason: ImageDecodingError.Reason) -> String {
        String(describing: reason).prefix { $0 != "(" }.description
    }

    /// A damaged description in `idat` gives the header the error the decode gives, with the file read whole.
    /// Before: the header read 48x32 (a tile's ispe) for each of the grids, 96x64 (the layer's) for the overlays.
    @Test(
        arguments: [
            // Grids: 8 bytes, version, flags (bit 0: 32-bit sizes), rows - 1, columns - 1, width, height.
            ("grid of 5 bytes", "grid.heic", 5, [:]),
            ("grid with 32-bit sizes in 8 bytes", "grid.heic", nil, [1: 1]),
            ("grid 0 wide", "grid.heic", nil, [4: 0, 5: 0]),
            // Overlays: 18 bytes, version, flags, four 16-bit fill values, width, height, one layer's x and y.
            ("overlay of version 1", "overlay.heic", nil, [0: 1]),
            ("overlay 0 high", "overlay.heic", nil, [12: 0, 13: 0]),
            ("overlay of 9 bytes", "overlay.heic", 9, [:]),
        ] as [(String, String, Int?, [Int: UInt8])])
    func aDamagedDescriptionIsTheDecodersError(
        damage: String, name: String, length: Int?, changes: [Int: UInt8]
    ) throws {
        var bytes = [UInt8](try Self.withoutDerivedImageExtent(name))
        let meta = try #require(Self.boxes(bytes, from: 0, to: bytes.count).first { $0.type == "meta" })
        let children = Self.boxes(bytes, from: meta.offset + 12, to: meta.offset + meta.size)
        let idat = try #require(children.first { $0.type == "idat" })
        for (offset, value) in changes { bytes[idat.offset + 8 + offset] = value }
        if let length {
            // The derived image is iloc's last entry; its extent's length is the entry's last four bytes.
            let iloc = try #require(children.first { $0.type == "iloc" })
            bytes[iloc.offset + iloc.size - 1] = UInt8(length)
        }
        let data = Data(bytes)
        let decoded = Result { () throws(ImageDecodingError) in
            try ImageDecoders.HEIF().decode(
                data,
                context: ImageDecodingContext(
                    header: ImageHeader(format: .heif, storedSize: PixelSize(width: 96, height: 64))))
        }
        let decodeError = try #require(decoded.failure, "\(damage): libheif decoded it")
        let headerError = try #require(
            #expect(throws: ImageDecodingError.self, "\(damage)") { try ImageHeader.parse(data) })
        #expect(headerError.format == .heif)
        #expect(
            Self.kind(headerError.reason) == Self.kind(decodeError.reason), "\(damage): \(headerError), \(decodeError)")
    }

    /// overlay.heic without the overlay's `ispe`, its one layer (item 1) referenced `layers` times by its `dimg`
    /// (1 or 2), its description (in `idat`, 18 bytes: version, flags, four 16-bit fill values, width, height,
    /// the layer's x and y) given 4 more bytes of zeros for a second layer at (0, 0) when `layers` is 2, then
    /// `length` long, with `changes` made to its bytes.
    static func overlay(layers: Int, length: Int, changes: [Int: UInt8]) throws -> Data {
        var bytes = [UInt8](try withoutDerivedImageExtent("overlay.heic"))
        let meta = try #require(boxes(bytes, from: 0, to: bytes.count).first { $0.type == "meta" })
        let children = boxes(bytes, from: meta.offset + 12, to: meta.offset + meta.size)
        let iloc = try #require(children.first { $0.type == "iloc" })
        let iref = try #require(children.first { $0.type == "iref" })
        let idat = try #require(children.first { $0.type == "idat" })
        for (offset, value) in changes { bytes[idat.offset + 8 + offset] = value }
        // The overlay is iloc's last entry (version 1, 32-bit offsets and lengths): its length is the last byte.
        bytes[iloc.offset + iloc.size - 1] = UInt8(length)
        guard layers == 2 else { return Data(bytes) }
        // Backwards, so the earlier offsets hold: idat grows by 4 bytes, the dimg reference (after iref's
        // FullBox header: size, type, from 2, count 1, to 1) by one item ID, meta by both.
        bytes.insert(contentsOf: [0, 0, 0, 0], at: idat.offset + idat.size)
        bytes[idat.offset + 3] += 4
        let dimg = iref.offset + 12
        #expect(Array(bytes[dimg..<(dimg + 14)]) == [0, 0, 0, 14] + Array("dimg".utf8) + [0, 2, 0, 1, 0, 1])
        bytes.replaceSubrange((dimg + 10)..<(dimg + 12), with: [0, 2, 0, 1])
        bytes[dimg + 3] += 2
        bytes[iref.offset + 3] += 2
        bytes[meta.offset + 3] += 6
        // Item 1 (iloc's first entry: ID, method, data reference, extent count, offset) lies in mdat, 6 bytes on.
        let layerOffset = iloc.offset + 16 + 8
        #expect(Array(bytes[(iloc.offset + 16)..<(iloc.offset + 18)]) == [0, 1])
        let moved = bytes[layerOffset..<(layerOffset + 4)].reduce(0) { $0 << 8 | Int($1) } + 6
        bytes.replaceSubrange(
            layerOffset..<(layerOffset + 4), with: (0..<4).reversed().map { UInt8(moved >> (8 * $0) & 0xFF) })
        return Data(bytes)
    }

    /// libheif 1.15 wants an x and a y for every layer its dimg lists, in the description's field size, after
    /// the canvas ("Overlay image data incomplete" otherwise; checked with the installed libheif 1.15.1 on
    /// each file): the header gives the decode's answer. Before, the header read 96x64 for every overlay
    /// whose canvas fitted, layers or not.
    @Test(
        arguments: [
            ("one layer, 14 bytes", 1, 14, [:], false),
            ("one layer, 17 bytes", 1, 17, [:], false),
            ("one layer, 32-bit sizes in 18 bytes", 1, 18, [1: 1, 10: 0, 11: 0, 12: 0, 13: 96, 17: 64], false),
            ("two layers, 18 bytes", 2, 18, [:], false),
            ("two layers, 21 bytes", 2, 21, [:], false),
            ("two layers, 22 bytes", 2, 22, [:], true),
        ] as [(String, Int, Int, [Int: UInt8], Bool)])
    func anOverlayWithoutRoomForEveryLayersOffsetIsTheDecodersError(
        damage: String, layers: Int, length: Int, changes: [Int: UInt8], decodes: Bool
    ) throws {
        let data = try Self.overlay(layers: layers, length: length, changes: changes)
        Self.expectHeaderAgreesWithDecode(data, damage: damage, decodes: decodes)
    }

    /// Decodes `data` (a 96x64 canvas) through libheif and reads its header: both give 96x64 when `decodes`, or
    /// both fail with the same kind of reason.
    static func expectHeaderAgreesWithDecode(_ data: Data, damage: String, decodes: Bool) {
        let canvas = PixelSize(width: 96, height: 64)
        let decoded = Result { () throws(ImageDecodingError) in
            try ImageDecoders.HEIF().decode(
                data, context: ImageDecodingContext(header: ImageHeader(format: .heif, storedSize: canvas)))
        }
        let header = Result { () throws(ImageDecodingError) in try ImageHeader.parse(data) }
        switch (decoded, header) {
        case (.success(let bitmap), .success(let header)):
            #expect(decodes, "\(damage): libheif decoded it")
            #expect(bitmap.pixelSize == canvas && header.storedSize == canvas, "\(damage)")
        case (.failure(let decodeError), .failure(let headerError)):
            #expect(!decodes, "\(damage): \(decodeError)")
            #expect(headerError.format == .heif)
            #expect(
                Self.kind(headerError.reason) == Self.kind(decodeError.reason),
                "\(damage): \(headerError), \(decodeError)")
        default:
            Issue.record("\(damage): the decode gave \(decoded), the header \(header)")
        }
    }

    /// `name` (grid.heic: a 2 x 2 grid, item 5, of tiles 1-4 in mdat; overlay.heic: item 2 over item 1) without
    /// the derived image's `ispe`, with `changes` made to its description (in `idat`), and its `iref` replaced
    /// by one holding the `dimg` references `references` (from, to), or none at all when `nil`. `meta` and
    /// `iloc`'s file offsets follow the change.
    static func derivedImage(_ name: String, changes: [Int: UInt8] = [:], references: [(from: Int, to: [Int])]?)
        throws -> Data
    {
        var bytes = [UInt8](try withoutDerivedImageExtent(name))
        let meta = try #require(boxes(bytes, from: 0, to: bytes.count).first { $0.type == "meta" })
        let children = boxes(bytes, from: meta.offset + 12, to: meta.offset + meta.size)
        let iloc = try #require(children.first { $0.type == "iloc" })
        let iref = try #require(children.first { $0.type == "iref" })
        let idat = try #require(children.first { $0.type == "idat" })
        #expect(iloc.offset < iref.offset && iref.offset < idat.offset)
        for (offset, value) in changes { bytes[idat.offset + 8 + offset] = value }
        // iref (FullBox, version 0: 16-bit item IDs) of dimg boxes: size, type, from, count, the items.
        var replacement: [UInt8] = []
        if let references {
            var content: [UInt8] = [0, 0, 0, 0]
            for (from, to) in references {
                let items = to.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
                content += .uint32BE(12 + 2 * to.count) + Array("dimg".utf8)
                content += [UInt8(from >> 8), UInt8(from & 0xFF), UInt8(to.count >> 8), UInt8(to.count & 0xFF)] + items
            }
            replacement = .uint32BE(8 + content.count) + Array("iref".utf8) + content
        }
        let growth = replacement.count - iref.size
        bytes.replaceSubrange(iref.offset..<(iref.offset + iref.size), with: replacement)
        bytes.replaceSubrange((meta.offset)..<(meta.offset + 4), with: [UInt8].uint32BE(meta.size + growth))
        // iloc (version 1, 32-bit offsets and lengths) lists items of one extent each, 16 bytes:
        // ID, construction method, data reference, extent count, offset, length. Method 0 counts from the file.
        for entry in stride(from: iloc.offset + 16, to: iloc.offset + iloc.size, by: 16) where bytes[entry + 3] == 0 {
            let offset = bytes[(entry + 8)..<(entry + 12)].reduce(0) { $0 << 8 | Int($1) }
            bytes.replaceSubrange((entry + 8)..<(entry + 12), with: [UInt8].uint32BE(offset + growth))
        }
        return Data(bytes)
    }

    /// libheif 1.15 decodes a grid only when the first `dimg` reference from it lists rows x columns tiles,
    /// and needs an `iref` for it ("Missing grid images: Tiled image with 2x2=4 tiles, but only 3 tile images
    /// in file", "No iref box available, but needed for grid image"; run with the installed libheif 1.15.1
    /// on each file): the header gives the decode's answer. Before, it read the grid's canvas, 96x64, for all.
    @Test(
        arguments: [
            ("4 tiles listed for a 1 x 2 grid", 0, [(5, [1, 2, 3, 4])], false),
            ("4 tiles listed for a 3 x 2 grid", 2, [(5, [1, 2, 3, 4])], false),
            ("3 tiles listed for a 2 x 2 grid", 1, [(5, [1, 2, 3])], false),
            ("5 tiles listed for a 2 x 2 grid", 1, [(5, [1, 2, 3, 4, 1])], false),
            ("no tiles listed", 1, [(5, [])], false),
            ("dimg only from another item", 1, [(4, [1])], false),
            ("3 tiles listed first, 4 second", 1, [(5, [1, 2, 3]), (5, [1, 2, 3, 4])], false),
            ("4 tiles listed first, 3 second", 1, [(5, [1, 2, 3, 4]), (5, [1, 2, 3])], true),
            ("no iref", 1, nil, false),
            ("4 tiles listed, as in the fixture", 1, [(5, [1, 2, 3, 4])], true),
        ] as [(String, UInt8, [(from: Int, to: [Int])]?, Bool)])
    func aGridWhoseDimgListsOtherThanRowsTimesColumnsTilesIsTheDecodersError(
        damage: String, rowsMinusOne: UInt8, references: [(from: Int, to: [Int])]?, decodes: Bool
    ) throws {
        let data = try Self.derivedImage("grid.heic", changes: [2: rowsMinusOne], references: references)
        // A grid libheif 1.15 decodes here lays out grid.heic's tiles, coded 64x64 under an ispe of 48x32: libheif
        // 1.22 and later refuse it for that, once its references pass.
        if decodes, HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 96, height: 64), "\(damage)")
            #expect(throws: HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif), "\(damage)") {
                try ImageDecoders.HEIF().decode(
                    data,
                    context: ImageDecodingContext(
                        header: ImageHeader(format: .heif, storedSize: PixelSize(width: 96, height: 64))))
            }
            return
        }
        Self.expectHeaderAgreesWithDecode(data, damage: damage, decodes: decodes)
    }

    /// libheif 1.15 refuses an overlay without an `iref` ("No 'iref' box: No iref box available, but needed for
    /// iovl image"; run with the installed libheif 1.15.1): the header does too. Before, it read its canvas.
    @Test(
        arguments: [
            ("overlay without an iref", nil, false),
            ("overlay with its iref rebuilt as the fixture has it", [(2, [1])], true),
        ] as [(String, [(from: Int, to: [Int])]?, Bool)])
    func anOverlayWithoutAnIrefIsTheDecodersError(
        damage: String, references: [(from: Int, to: [Int])]?, decodes: Bool
    ) throws {
        let data = try Self.derivedImage("overlay.heic", references: references)
        Self.expectHeaderAgreesWithDecode(data, damage: damage, decodes: decodes)
    }

    /// libheif 1.15 reads a grid's version and passes over it: the header does too. libheif 1.23 refuses the grid
    /// as an unsupported feature (``HEIFLibrary/refusesGridsOfAnotherVersion``), as it would a codec it lacks: the
    /// header still reads its canvas.
    @Test func aGridOfAnotherVersionKeepsItsCanvas() throws {
        var bytes = [UInt8](try Self.withoutDerivedImageExtent("grid.heic"))
        let idat = try #require(
            Self.boxes(bytes, from: 0, to: bytes.count).first { $0.type == "meta" }.flatMap { meta in
                Self.boxes(bytes, from: meta.offset + 12, to: meta.offset + meta.size).first { $0.type == "idat" }
            })
        bytes[idat.offset + 8] = 1
        let data = Data(bytes)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        if HEIFLibrary.refusesGridsOfAnotherVersion {
            let unsupported = "Unsupported feature: Unsupported data version: Grid image version 1 is not supported"
            #expect(throws: ImageDecodingError(format: .heif, reason: .unsupportedFeature(unsupported))) {
                try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            }
            return
        }
        let bitmap = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == header.storedSize)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
#endif
