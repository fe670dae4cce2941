#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A `grid` whose tiles are one coded image used over and over: libheif 1.15 decodes a tile once per use,
/// so a file of a few kilobytes can have it decode far more pixels than its canvas holds, each tile within
/// the pixel budget (a tile coded 4096x4096, used 4,000 times, is 67 billion pixels of HEVC for a canvas of
/// 64x64).
@Suite("HEIF grids whose tiles decode far more than their canvas")
struct HEIFGridAmplificationTests {
    typealias S = SyntheticHeaders

    /// The boxes every synthetic file here starts with: `ftyp` (heic) and `meta`'s `hdlr` (pict).
    static let ftyp = S.box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8))
    static let hdlr = S.fullBox("hdlr", [0, 0, 0, 0] + Array("pict".utf8) + [UInt8](repeating: 0, count: 13))

    /// An item information entry (version 2) of item `item` (below 256) of `type`.
    static func infe(_ item: Int, _ type: String, hidden: Bool) -> [UInt8] {
        S.fullBox("infe", version: 2, flags: hidden ? 1 : 0, [0, UInt8(item), 0, 0] + Array(type.utf8) + [0])
    }

    /// `ftyp`, the `meta` box `meta` makes for coded data at a file offset, and `mdat` holding `coded` there.
    static func file(coded: [UInt8], meta: (_ codedOffset: Int) -> [UInt8]) -> Data {
        let codedOffset = ftyp.count + meta(0).count + 8
        return Data(ftyp + meta(codedOffset) + S.box("mdat", coded))
    }

    /// photo.heic's coded picture, 96x64: its `hvcC` and `ispe` boxes, whole, and its data.
    static func photoPicture() throws -> (hvcC: [UInt8], ispe: [UInt8], coded: [UInt8]) {
        let photo = try Fixtures.data("heif", "photo.heic")
        let file = HEIFBoxes(bytes: HeaderBytes(photo, format: nil))
        let meta = try #require(try file.child("meta", from: 0, to: photo.count))
        let iprp = try #require(try file.child("iprp", from: meta.contentStart + 4, to: meta.end))
        let ipco = try #require(try file.child("ipco", from: iprp.contentStart, to: iprp.end))
        func whole(_ type: String) throws -> [UInt8] {
            let box = try #require(try file.child(type, from: ipco.contentStart, to: ipco.end))
            let start = box.contentStart - 8
            return Array(photo[start..<box.end])
        }
        // photo.heic's iloc: version 0, 4-byte offsets and lengths, a 4-byte base offset, one extent.
        let iloc = try #require(try file.child("iloc", from: meta.contentStart + 4, to: meta.end))
        let entry = iloc.contentStart + 8
        let base = try file.bytes.uint32BE(at: entry + 4)
        let offset = base + (try file.bytes.uint32BE(at: entry + 10))
        let coded = Array(photo[offset..<(offset + (try file.bytes.uint32BE(at: entry + 14)))])
        return (try whole("hvcC"), try whole("ispe"), coded)
    }

    /// photo.heic's coded picture (96x64: its hvcC, ispe and data) as hidden item 1, used `rows` x `columns`
    /// times as the tiles of a primary `grid` item 2 of `canvas`, described in `idat`.
    static func grid(rows: Int, columns: Int, canvas: PixelSize, overlay: Bool = false, tileDeclares: PixelSize? = nil)
        throws -> Data
    {
        let photo = try photoPicture()
        let tileProperties =
            photo.hvcC + (tileDeclares.map { S.ispe(width: $0.width, height: $0.height) } ?? photo.ispe)
        let coded = photo.coded

        let pitm = S.fullBox("pitm", [0, 2])
        let iinf = S.fullBox(
            "iinf", [0, 2] + infe(1, "hvc1", hidden: true) + infe(2, overlay ? "iovl" : "grid", hidden: false))
        let uses = rows * columns
        let iref = S.fullBox(
            "iref",
            S.box(
                "dimg",
                ByteWriter.build { dimg in
                    dimg.uint16(2, bigEndian: true)
                    dimg.uint16(uses, bigEndian: true)
                    for _ in 0..<uses { dimg.uint16(1, bigEndian: true) }
                }))
        let ipco2 = S.box("ipco", tileProperties + S.ispe(width: canvas.width, height: canvas.height))
        let ipma = S.fullBox("ipma", [0, 0, 0, 2, 0, 1, 2, 0x81, 0x82, 0, 2, 1, 0x83])
        let iprp2 = S.box("iprp", ipco2 + ipma)
        // Version, flags (16-bit sizes), rows - 1, columns - 1, output width and height.
        let description = ByteWriter.build { grid in
            if overlay {
                grid.append([0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF])
            } else {
                grid.append([0, 0, UInt8(rows - 1), UInt8(columns - 1)])
            }
            grid.uint16(canvas.width, bigEndian: true)
            grid.uint16(canvas.height, bigEndian: true)
            if overlay { for _ in 0..<uses { grid.append([0, 0, 0, 0]) } }
        }
        let idat = S.box("idat", description)
        func metaBox(codedOffset: Int) -> [UInt8] {
            // iloc version 1: 4-byte offsets and lengths, no base offset; the tile in mdat, the grid in idat.
            let iloc = S.fullBox(
                "iloc", version: 1,
                ByteWriter.build { iloc in
                    iloc.append([0x44, 0x00])
                    iloc.uint16(2, bigEndian: true)
                    iloc.append([0, 1, 0, 0, 0, 0, 0, 1])
                    iloc.uint32(codedOffset, bigEndian: true)
                    iloc.uint32(coded.count, bigEndian: true)
                    iloc.append([0, 2, 0, 1, 0, 0, 0, 1])
                    iloc.uint32(0, bigEndian: true)
                    iloc.uint32(description.count, bigEndian: true)
                })
            return S.fullBox("meta", hdlr + pitm + iloc + iinf + iref + iprp2 + idat)
        }
        return file(coded: coded, meta: metaBox(codedOffset:))
    }

    @Test func aGridOfOneTileCodedLargerThanItDeclaresUsedOverAndOverIsRefused() throws {
        // 1,024 uses of a tile that declares 8x8 and codes 96x64, on a canvas of 256x256: each size is within
        // a budget of a million, and what libheif decodes adds up to over six times it.
        let data = try Self.grid(
            rows: 32, columns: 32, canvas: PixelSize(width: 256, height: 256),
            tileDeclares: PixelSize(width: 8, height: 8))
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 256, height: 256))
        #expect(HEIFCodedSize.largest(in: data) == PixelSize(width: 256, height: 256))
        #expect(HEIFDerivations.problem(in: data) == nil)
        let decoded = 256 * 256 + 1024 * 96 * 64
        #expect(HEIFDerivations.decodedPixels(in: data) == decoded)
        // Before: decoded, 256x256.
        let error = decodingError { () throws(ImageDecodingError) in
            try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header, pixelBudget: 1_000_000))
        }
        let refusal = ImageDecodingError.Reason.pixelBudgetExceeded(pixels: decoded, budget: 1_000_000)
        #expect(error == ImageDecodingError(format: .heif, reason: refusal))
        #expect(error?.reason.suggestsDamage == false)
        // Within four times the budget it decodes; libheif 1.23 refuses its 1,024 references as it reads it.
        let withinBudget = ImageDecodingContext(header: header, pixelBudget: decoded / 4 + 1)
        if HEIFLibrary.limitsReferencesToAThousand {
            let limit = "Number of references in iref box (1024) exceeds the security limits of 1000 references."
            let tooMany = ImageDecodingError(
                format: .heif, reason: .corrupt("Invalid input: Security limit exceeded: \(limit)"))
            #expect(throws: tooMany) { try ImageDecoders.HEIF().decode(data, context: withinBudget) }
            return
        }
        let bitmap = try ImageDecoders.HEIF().decode(data, context: withinBudget)
        #expect(bitmap.pixelSize == PixelSize(width: 256, height: 256))
    }

    /// photo.heic's picture as primary item 1, and as its thumbnail item 3, a 96x64 grid of 8x8 tiles that
    /// are each that picture again (hidden item 2, declared 12x8): a thumbnail that costs 65 times the
    /// primary image. (The reviewer's had tiles coded 4096x4096: 20 s of decoding for one request.)
    static func thumbnailGrid() throws -> Data {
        let photo = try photoPicture()
        let pitm = S.fullBox("pitm", [0, 1])
        let iinf = S.fullBox(
            "iinf",
            [0, 3] + infe(1, "hvc1", hidden: false) + infe(2, "hvc1", hidden: true) + infe(3, "grid", hidden: false))
        let iref = S.fullBox(
            "iref",
            S.box("thmb", [0, 3, 0, 1, 0, 1])
                + S.box(
                    "dimg",
                    ByteWriter.build { dimg in
                        dimg.uint16(3, bigEndian: true)
                        dimg.uint16(64, bigEndian: true)
                        for _ in 0..<64 { dimg.uint16(2, bigEndian: true) }
                    }))
        // Properties: 1 the picture's hvcC, 2 its ispe (96x64), 3 the tiles' declared 12x8.
        let ipco = S.box("ipco", photo.hvcC + photo.ispe + S.ispe(width: 12, height: 8))
        let ipma = S.fullBox("ipma", [0, 0, 0, 3, 0, 1, 2, 0x81, 0x02, 0, 2, 2, 0x81, 0x03, 0, 3, 1, 0x02])
        // Version, flags (16-bit sizes), rows - 1, columns - 1, 96x64.
        let description: [UInt8] = [0, 0, 7, 7, 0, 96, 0, 64]
        func metaBox(codedOffset: Int) -> [UInt8] {
            let iloc = S.fullBox(
                "iloc", version: 1,
                ByteWriter.build { iloc in
                    iloc.append([0x44, 0x00])
                    iloc.uint16(3, bigEndian: true)
                    for item in 1...2 {
                        iloc.append([0, UInt8(item), 0, 0, 0, 0, 0, 1])
                        iloc.uint32(codedOffset, bigEndian: true)
                        iloc.uint32(photo.coded.count, bigEndian: true)
                    }
                    iloc.append([0, 3, 0, 1, 0, 0, 0, 1])
                    iloc.uint32(0, bigEndian: true)
                    iloc.uint32(description.count, bigEndian: true)
                })
            return S.fullBox(
                "meta", hdlr + pitm + iloc + iinf + iref + S.box("iprp", ipco + ipma) + S.box("idat", description))
        }
        return file(coded: photo.coded, meta: metaBox(codedOffset:))
    }

    @Test func aThumbnailThatCostsMoreThanItsImageIsPassedOver() throws {
        let data = try Self.thumbnailGrid()
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        #expect(HEIFDerivations.problem(in: data) == nil)
        #expect(HEIFDerivations.decodedPixels(in: data) == 96 * 64)
        #expect(HEIFDerivations.decodedPixels(in: data, item: 3) == 96 * 64 + 64 * 96 * 64)
        let primary = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        let photo = try Fixtures.data("heif", "photo.heic")
        let picture = try ImageDecoders.HEIF().decode(
            photo, context: ImageDecodingContext(header: try ImageHeader.parse(photo)))
        let primaryIsThePicture = primary.pixels == picture.pixels
        #expect(primaryIsThePicture)
        // A request the thumbnail covers, within a budget the primary image's decode keeps to: the primary
        // image, not the thumbnail (before: the thumbnail's 64 tiles, drawn over one another).
        let covered = ImageDecodingContext(
            header: header, minimumSize: PixelSize(width: 48, height: 32), pixelBudget: 10_000)
        let bitmap = try ImageDecoders.HEIF().decode(data, context: covered)
        let isThePrimaryImage = bitmap.pixels == picture.pixels
        #expect(isThePrimaryImage, "the thumbnail was decoded")
    }

    /// Only an alpha plane is decoded with its image: libheif 1.15 leaves a depth map (or an HDR gain map, a
    /// portrait matte) alone when it decodes the primary image, so it does not count against the budget.
    /// alpha.avif with its `auxC` renamed from alpha to depth (same length): before, its depth map counted,
    /// 2 x 96 x 64 pixels, as its alpha does.
    @Test func aDepthMapIsNotCountedAsDecoded() throws {
        let alpha = try Fixtures.data("heif", "alpha.avif")
        let depth = Data(
            alpha.replacing(
                Data("urn:mpeg:mpegB:cicp:systems:auxiliary:alpha".utf8),
                with: Data("urn:mpeg:mpegB:cicp:systems:auxiliary:depth".utf8)))
        #expect(depth != alpha && depth.count == alpha.count)
        #expect(HEIFDerivations.decodedPixels(in: alpha) == 2 * 96 * 64)
        #expect(HEIFDerivations.decodedPixels(in: depth) == 96 * 64)
        let file = HEIFBoxes(bytes: HeaderBytes(alpha, format: nil))
        let meta = try #require(try file.child("meta", from: 0, to: alpha.count))
        #expect(try file.alphaItems(metaContent: meta.contentStart + 4, metaEnd: meta.end).count == 1)
        // libheif decodes it, without an alpha plane.
        let header = try ImageHeader.parse(depth)
        let bitmap = try ImageDecoders.HEIF().decode(
            depth, context: ImageDecodingContext(header: header, pixelBudget: header.storedSize.pixelCount))
        #expect(bitmap.pixelSize == header.storedSize)
        #expect(stride(from: 3, to: bitmap.pixels.count, by: 4).allSatisfy { bitmap.pixels[$0] == 255 })
    }

    @Test func soundFilesDecodeWithABudgetOfTheirOwnSize() throws {
        // Tiles, layers and alpha planes add up to about the canvas, twice it with alpha: far from four times.
        let grid = try Self.grid(rows: 2, columns: 2, canvas: PixelSize(width: 192, height: 128))
        #expect(HEIFDerivations.decodedPixels(in: grid) == 192 * 128 + 4 * 96 * 64)
        var files = [grid]
        for name in ["grid.heic", "overlay.heic", "photo.heic", "alpha.avif", "thumbnail.heic"] {
            files.append(try Fixtures.data("heif", name))
        }
        #expect(HEIFDerivations.decodedPixels(in: files[4]) == 2 * 96 * 64)  // alpha.avif: the image and its alpha
        for (index, data) in files.enumerated() {
            let header = try ImageHeader.parse(data)
            let context = ImageDecodingContext(header: header, pixelBudget: header.storedSize.pixelCount)
            // grid.heic's tiles are coded 64x64 under an ispe of 48x32, which libheif 1.22 and later refuse.
            if index == 1, HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
                #expect(throws: HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif)) {
                    try ImageDecoders.HEIF().decode(data, context: context)
                }
                continue
            }
            let bitmap = try ImageDecoders.HEIF().decode(data, context: context)
            #expect(bitmap.pixelSize == header.storedSize)
        }
    }
}
#endif
