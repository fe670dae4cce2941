import Foundation

/// The sizes a HEIF or AVIF file's codec streams say they code, read without decoding: the
/// `pic_width_in_luma_samples` and `pic_height_in_luma_samples` of every HEVC sequence parameter set
/// in an `hvcC` property, the largest frame of every AV1 sequence header in an `av1C` property or at
/// the start of an `av01` item's data, and the output size of every `grid` item.
///
/// The `ispe` property a decoder checks is only what the file declares; a coded picture larger than
/// that is allocated in full by the codec before anyone sees its size (a 488-byte AVIF declaring
/// 64x64 decodes to 4096x4096). These are the sizes the codec will allocate.
enum HEIFCodedSize {
    /// The largest coded size in `data`; `nil` when none could be read (the caller then has only the
    /// declared size to go by).
    static func largest(in data: Data) -> PixelSize? {
        let bytes = [UInt8](data)
        var sizes: [PixelSize] = []
        guard let ipco = BoxPath.find(["meta", "iprp", "ipco"], in: bytes) else { return nil }
        for property in BoxPath.children(of: ipco, in: bytes) {
            switch property.type {
            case "hvcC": sizes += hevcSizes(Array(bytes[property.content]))
            case "av1C":
                // Four bytes of fields, then optional configuration OBUs (often none).
                if property.content.count > 4 {
                    sizes += av1Sizes(Array(bytes[(property.content.lowerBound + 4)..<property.content.upperBound]))
                }
            default: break
            }
        }
        sizes += itemSizes(bytes)
        return sizes.max { $0.pixelCount < $1.pixelCount }
    }

    // MARK: HEVC

    /// The picture sizes of the sequence parameter sets in an HEVCDecoderConfigurationRecord.
    static func hevcSizes(_ record: [UInt8]) -> [PixelSize] {
        guard record.count >= 23 else { return [] }
        var sizes: [PixelSize] = []
        var offset = 23
        for _ in 0..<Int(record[22]) {
            guard offset + 3 <= record.count else { break }
            let type = record[offset] & 0x3F
            let count = Int(record[offset + 1]) << 8 | Int(record[offset + 2])
            offset += 3
            for _ in 0..<count {
                guard offset + 2 <= record.count else { return sizes }
                let length = Int(record[offset]) << 8 | Int(record[offset + 1])
                offset += 2
                guard offset + length <= record.count else { return sizes }
                if type == 33, let size = spsSize(Array(record[offset..<(offset + length)])) { sizes.append(size) }
                offset += length
            }
        }
        return sizes
    }

    /// `pic_width_in_luma_samples` and `pic_height_in_luma_samples` of an SPS NAL unit (ITU-T H.265 7.3.2.2).
    static func spsSize(_ nal: [UInt8]) -> PixelSize? {
        guard nal.count > 2 else { return nil }
        // Emulation prevention: 00 00 03 stands for 00 00.
        var payload: [UInt8] = []
        var zeros = 0
        for byte in nal.dropFirst(2) {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            payload.append(byte)
        }
        var bits = BitReader(payload)
        guard bits.skip(4), let maxSubLayersMinus1 = bits.read(3), bits.skip(1),
            bits.skip(88 + 8)  // general profile, tier, flags and level
        else { return nil }
        var profilePresent: [Bool] = []
        var levelPresent: [Bool] = []
        for _ in 0..<maxSubLayersMinus1 {
            guard let profile = bits.read(1), let level = bits.read(1) else { return nil }
            profilePresent.append(profile == 1)
            levelPresent.append(level == 1)
        }
        if maxSubLayersMinus1 > 0 { guard bits.skip(2 * (8 - maxSubLayersMinus1)) else { return nil } }
        for layer in 0..<maxSubLayersMinus1 {
            guard bits.skip((profilePresent[layer] ? 88 : 0) + (levelPresent[layer] ? 8 : 0)) else { return nil }
        }
        guard bits.readExpGolomb() != nil, let chromaFormat = bits.readExpGolomb() else { return nil }
        if chromaFormat == 3 { guard bits.skip(1) else { return nil } }
        guard let width = bits.readExpGolomb(), let height = bits.readExpGolomb(), width > 0, height > 0 else {
            return nil
        }
        // ue(v) reaches 2^32; capped, an absurd size stays far past any budget without overflowing.
        return PixelSize(width: min(width, 1 << 24), height: min(height, 1 << 24))
    }

    // MARK: AV1

    /// The largest frame sizes of the sequence header OBUs among `obus` (AV1 5.5).
    static func av1Sizes(_ obus: [UInt8]) -> [PixelSize] {
        var sizes: [PixelSize] = []
        var offset = 0
        while offset < obus.count {
            let header = obus[offset]
            let type = (header >> 3) & 0x0F
            let hasExtension = header & 0x04 != 0
            let hasSize = header & 0x02 != 0
            offset += hasExtension ? 2 : 1
            var length = obus.count - offset
            if hasSize {
                guard let (value, used) = leb128(obus, at: offset) else { break }
                length = value
                offset += used
            }
            guard offset <= obus.count, length >= 0, length <= obus.count - offset else { break }
            if type == 1, let size = sequenceHeaderSize(Array(obus[offset..<(offset + length)])) { sizes.append(size) }
            offset += length
            if !hasSize { break }
        }
        return sizes
    }

    /// `max_frame_width_minus_1 + 1` and `max_frame_height_minus_1 + 1` of a sequence header (AV1 5.5.1).
    static func sequenceHeaderSize(_ payload: [UInt8]) -> PixelSize? {
        var bits = BitReader(payload)
        guard bits.skip(4), let reduced = bits.read(1) else { return nil }
        if reduced == 1 {
            guard bits.skip(5) else { return nil }
        } else {
            guard let timing = bits.read(1) else { return nil }
            var decoderModel = 0
            var bufferDelayLength = 0
            if timing == 1 {
                guard bits.skip(64), let equalInterval = bits.read(1) else { return nil }
                if equalInterval == 1 { guard bits.readExpGolomb() != nil else { return nil } }  // uvlc()
                guard let present = bits.read(1) else { return nil }
                decoderModel = present
                if present == 1 {
                    guard let delay = bits.read(5), bits.skip(32 + 5 + 5) else { return nil }
                    bufferDelayLength = delay + 1
                }
            }
            guard let initialDelay = bits.read(1), let pointsMinus1 = bits.read(5) else { return nil }
            for _ in 0...pointsMinus1 {
                guard bits.skip(12), let level = bits.read(5) else { return nil }
                if level > 7 { guard bits.skip(1) else { return nil } }
                if decoderModel == 1 {
                    guard let present = bits.read(1) else { return nil }
                    if present == 1 { guard bits.skip(2 * bufferDelayLength + 1) else { return nil } }
                }
                if initialDelay == 1 {
                    guard let present = bits.read(1) else { return nil }
                    if present == 1 { guard bits.skip(4) else { return nil } }
                }
            }
        }
        guard let widthBits = bits.read(4), let heightBits = bits.read(4),
            let width = bits.read(widthBits + 1), let height = bits.read(heightBits + 1)
        else { return nil }
        return PixelSize(width: width + 1, height: height + 1)
    }

    /// The sizes items' own data give, found through `iinf` and `iloc`: the sequence header at the start
    /// of every `av01` item, and the output size of every `grid` item (the canvas libheif allocates for
    /// the tiles, ISO/IEC 23008-12 6.6.2.3).
    private static func itemSizes(_ bytes: [UInt8]) -> [PixelSize] {
        guard let iinf = BoxPath.find(["meta", "iinf"], in: bytes),
            let iloc = BoxPath.find(["meta", "iloc"], in: bytes)
        else { return [] }
        // iinf: FullBox, entry count (16 or 32 bits), then infe boxes: FullBox, item ID, protection, type.
        guard iinf.content.count >= 8 else { return [] }
        let version = bytes[iinf.content.lowerBound]
        let entriesStart = iinf.content.lowerBound + 4 + (version == 0 ? 2 : 4)
        guard entriesStart <= iinf.content.upperBound else { return [] }
        var types: [Int: String] = [:]
        for infe in BoxPath.children(of: entriesStart..<iinf.content.upperBound, in: bytes) where infe.type == "infe" {
            let start = infe.content.lowerBound
            guard infe.content.count >= 12, bytes[start] >= 2 else { continue }
            let idLength = bytes[start] >= 3 ? 4 : 2
            let id = bytes[(start + 4)..<(start + 4 + idLength)].reduce(0) { $0 << 8 | Int($1) }
            let typeOffset = start + 4 + idLength + 2
            guard typeOffset + 4 <= infe.content.upperBound else { continue }
            types[id] = String(decoding: bytes[typeOffset..<(typeOffset + 4)], as: UTF8.self)
        }
        guard types.values.contains(where: { $0 == "av01" || $0 == "grid" }) else { return [] }
        let idat = BoxPath.find(["meta", "idat"], in: bytes)?.content
        var sizes: [PixelSize] = []
        for (id, range) in itemExtents(bytes, iloc: iloc.content, idat: idat) {
            switch types[id] {
            case "av01":
                // The sequence header comes first; a few hundred bytes are more than enough.
                sizes += av1Sizes(Array(bytes[range].prefix(1024)))
            case "grid":
                // Version, flags (bit 0: 32-bit sizes), rows - 1, columns - 1, output width and height.
                let grid = Array(bytes[range])
                let fieldLength = grid.count >= 2 && grid[1] & 1 == 1 ? 4 : 2
                guard grid.count >= 4 + 2 * fieldLength else { continue }
                let width = grid[4..<(4 + fieldLength)].reduce(0) { $0 << 8 | Int($1) }
                let height = grid[(4 + fieldLength)..<(4 + 2 * fieldLength)].reduce(0) { $0 << 8 | Int($1) }
                if width > 0, height > 0 { sizes.append(PixelSize(width: width, height: height)) }
            default:
                break
            }
        }
        return sizes
    }

    /// The first extent of each item stored in the file (construction method 0) or in `idat` (1), from `iloc`.
    private static func itemExtents(_ bytes: [UInt8], iloc: Range<Int>, idat: Range<Int>?) -> [(Int, Range<Int>)] {
        var reader = ByteReader(bytes, iloc)
        guard let version = reader.integer(1), reader.skip(3), let sizes = reader.integer(1),
            let moreSizes = reader.integer(1)
        else { return [] }
        let (offsetSize, lengthSize, baseOffsetSize) = (sizes >> 4, sizes & 0x0F, moreSizes >> 4)
        let indexSize = version == 1 || version == 2 ? moreSizes & 0x0F : 0
        guard let count = reader.integer(version < 2 ? 2 : 4) else { return [] }
        var extents: [(Int, Range<Int>)] = []
        for _ in 0..<count {
            guard let id = reader.integer(version < 2 ? 2 : 4) else { break }
            var method = 0
            if version == 1 || version == 2 {
                guard let value = reader.integer(2) else { break }
                method = value & 0x0F
            }
            guard reader.skip(2), let base = reader.integer(baseOffsetSize), let extentCount = reader.integer(2)
            else { break }
            // What the offsets count from: the file, or the content of idat.
            let container: Range<Int>? = method == 0 ? 0..<bytes.count : method == 1 ? idat : nil
            var first: Range<Int>?
            for _ in 0..<extentCount {
                guard reader.skip(indexSize), let offset = reader.integer(offsetSize),
                    let length = reader.integer(lengthSize)
                else { return extents }
                guard first == nil, let container else { continue }
                // Eight-byte fields can hold anything: no sum may overflow, no range run backwards.
                let (relative, overflow) = base.addingReportingOverflow(offset)
                guard !overflow, relative >= 0, relative <= container.count, length >= 0 else { continue }
                let start = container.lowerBound + relative
                let available = container.count - relative
                first = start..<(length == 0 || length > available ? container.upperBound : start + length)
            }
            if let first { extents.append((id, first)) }
        }
        return extents
    }

    private static func leb128(_ bytes: [UInt8], at offset: Int) -> (Int, Int)? {
        var value = 0
        for index in 0..<8 {
            guard offset + index < bytes.count else { return nil }
            let byte = bytes[offset + index]
            value |= Int(byte & 0x7F) << (7 * index)
            if byte & 0x80 == 0 { return (value, index + 1) }
        }
        return nil
    }
}

/// Boxes of an ISO-BMFF file found by path, for ``HEIFCodedSize``; every read is bounds-checked.
private enum BoxPath {
    struct Box {
        let type: String
        let content: Range<Int>
    }

    /// The boxes directly inside `range` (a FullBox's content must start after its 4 bytes of fields).
    static func children(of range: Range<Int>, in bytes: [UInt8]) -> [Box] {
        var boxes: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            var size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            var header = 8
            if size == 1 {
                guard offset + 16 <= range.upperBound else { break }
                size = bytes[(offset + 8)..<(offset + 16)].reduce(0) { $0 << 8 | Int($1) }
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header, size <= range.upperBound - offset else { break }
            boxes.append(Box(type: type, content: (offset + header)..<(offset + size)))
            offset += size
        }
        return boxes
    }

    static func children(of box: Box, in bytes: [UInt8]) -> [Box] { children(of: box.content, in: bytes) }

    /// The box at `path` from the top of the file; `meta` is a FullBox, so its children start 4 bytes in.
    static func find(_ path: [String], in bytes: [UInt8]) -> Box? {
        var range = 0..<bytes.count
        var found: Box?
        for type in path {
            guard let box = children(of: range, in: bytes).first(where: { $0.type == type }) else { return nil }
            found = box
            let fieldBytes = type == "meta" ? 4 : 0
            guard box.content.count >= fieldBytes else { return nil }
            range = (box.content.lowerBound + fieldBytes)..<box.content.upperBound
        }
        return found
    }
}

/// Big-endian integers of 0 to 8 bytes within a range, for `iloc`.
private struct ByteReader {
    let bytes: [UInt8]
    var offset: Int
    let end: Int

    init(_ bytes: [UInt8], _ range: Range<Int>) {
        self.bytes = bytes
        offset = range.lowerBound
        end = range.upperBound
    }

    mutating func integer(_ length: Int) -> Int? {
        guard length >= 0, length <= 8, offset + length <= end else { return nil }
        defer { offset += length }
        return bytes[offset..<(offset + length)].reduce(0) { $0 << 8 | Int($1) }
    }

    mutating func skip(_ length: Int) -> Bool {
        guard length >= 0, offset + length <= end else { return false }
        offset += length
        return true
    }
}

/// Bits read most significant first, for parameter sets and sequence headers.
private struct BitReader {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// `count` bits (at most 32) as an unsigned number.
    mutating func read(_ count: Int) -> Int? {
        guard count >= 0, count <= 32, position + count <= bytes.count * 8 else { return nil }
        var value = 0
        for _ in 0..<count {
            value = value << 1 | Int(bytes[position >> 3] >> (7 - position & 7) & 1)
            position += 1
        }
        return value
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, position + count <= bytes.count * 8 else { return false }
        position += count
        return true
    }

    /// An unsigned Exp-Golomb number: H.265's ue(v), and AV1's uvlc(), which is the same code.
    mutating func readExpGolomb() -> Int? {
        var zeros = 0
        while true {
            guard let bit = read(1) else { return nil }
            if bit == 1 { break }
            zeros += 1
            guard zeros < 32 else { return nil }
        }
        guard let rest = read(zeros) else { return nil }
        return (1 << zeros) - 1 + rest
    }
}
