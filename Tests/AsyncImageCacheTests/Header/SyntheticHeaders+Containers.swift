import Foundation

/// RIFF/WebP and ISO-BMFF (HEIF, AVIF) structures, following the WebP container specification and
/// ISO/IEC 14496-12 / 23008-12.
extension SyntheticHeaders {
    /// A RIFF chunk, padded to an even length.
    static func riffChunk(_ type: String, _ content: [UInt8]) -> [UInt8] {
        ByteWriter.build { chunk in
            chunk.ascii(type)
            chunk.uint32(content.count, bigEndian: false)
            chunk.append(content)
            if content.count % 2 == 1 { chunk.append([0]) }
        }
    }

    /// "RIFF", the size of what follows, "WEBP", then the chunks.
    static func webp(_ chunks: [[UInt8]]) -> Data {
        let body = chunks.flatMap { $0 }
        return Data(
            ByteWriter.build { riff in
                riff.ascii("RIFF")
                riff.uint32(4 + body.count, bigEndian: false)
                riff.ascii("WEBP")
                riff.append(body)
            })
    }

    /// A lossy key frame header: frame tag, start code, 14-bit sizes with the scaling bits set to
    /// `scaleBits` (which the reader must ignore), then a few bytes of partition data.
    static func vp8Chunk(width: Int, height: Int, scaleBits: Int = 0) -> [UInt8] {
        riffChunk(
            "VP8 ",
            ByteWriter.build { vp8 in
                vp8.append([0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A])
                vp8.uint16(width | scaleBits << 14, bigEndian: false)
                vp8.uint16(height | scaleBits << 14, bigEndian: false)
                vp8.append([0, 0, 0, 0])
            })
    }

    /// A lossless header: the 0x2F signature, then width - 1 and height - 1 in 14 bits each,
    /// an alpha hint and a zero version, least significant bit first.
    static func vp8lChunk(width: Int, height: Int) -> [UInt8] {
        riffChunk(
            "VP8L",
            ByteWriter.build { vp8l in
                vp8l.append([0x2F])
                vp8l.uint32((width - 1) | (height - 1) << 14 | 1 << 28, bigEndian: false)
                vp8l.append([0, 0, 0])
            })
    }

    /// An extended file: VP8X with the canvas size (24 bits, minus one), a VP8L image and, when
    /// given, an EXIF chunk after it as the specification orders them.
    static func webpExtended(width: Int, height: Int, exif: [UInt8]? = nil) -> Data {
        let vp8x = riffChunk(
            "VP8X",
            ByteWriter.build { vp8x in
                vp8x.append([exif == nil ? 0x10 : 0x18, 0, 0, 0])  // alpha (0x10), EXIF (0x08)
                vp8x.uint24LE(width - 1)
                vp8x.uint24LE(height - 1)
            })
        var chunks = [vp8x, vp8lChunk(width: 1, height: 1)]
        if let exif { chunks.append(riffChunk("EXIF", exif)) }
        return webp(chunks)
    }

    /// An ISO-BMFF box.
    static func box(_ type: String, _ content: [UInt8]) -> [UInt8] {
        ByteWriter.build { box in
            box.uint32(8 + content.count, bigEndian: true)
            box.ascii(type)
            box.append(content)
        }
    }

    /// An ISO-BMFF full box: version and 24-bit flags before the content.
    static func fullBox(_ type: String, version: UInt8 = 0, flags: UInt8 = 0, _ content: [UInt8]) -> [UInt8] {
        box(type, [version, 0, 0, flags] + content)
    }

    static func ispe(width: Int, height: Int) -> [UInt8] {
        fullBox(
            "ispe",
            ByteWriter.build {
                $0.uint32(width, bigEndian: true)
                $0.uint32(height, bigEndian: true)
            })
    }

    /// ftyp, then meta (hdlr, optional pitm, iprp with ipco and ipma), then an empty mdat.
    ///
    /// `associations` lists, per item ID, the 1-based property indices; each is marked essential.
    static func heif(
        majorBrand: String, compatibleBrands: [String], primaryItem: Int?,
        properties: [[UInt8]], associations: [(item: Int, properties: [Int])]
    ) -> Data {
        let ftyp = box(
            "ftyp",
            ByteWriter.build { ftyp in
                ftyp.ascii(majorBrand)
                ftyp.uint32(0, bigEndian: true)
                compatibleBrands.forEach { ftyp.ascii($0) }
            })
        let hdlr = fullBox(
            "hdlr",
            ByteWriter.build { hdlr in
                hdlr.uint32(0, bigEndian: true)
                hdlr.ascii("pict")
                hdlr.append([UInt8](repeating: 0, count: 13))
            })
        let pitm = primaryItem.map { item in fullBox("pitm", ByteWriter.build { $0.uint16(item, bigEndian: true) }) }
        let ipma = fullBox(
            "ipma",
            ByteWriter.build { ipma in
                ipma.uint32(associations.count, bigEndian: true)
                for association in associations {
                    ipma.uint16(association.item, bigEndian: true)
                    ipma.append([UInt8(association.properties.count)])
                    ipma.append(association.properties.map { UInt8($0) | 0x80 })
                }
            })
        let iprp = box("iprp", box("ipco", properties.flatMap { $0 }) + ipma)
        let meta = fullBox("meta", hdlr + (pitm ?? []) + iprp)
        return Data(ftyp + meta + box("mdat", [1, 2, 3, 4]))
    }
}
