import Foundation

/// The sizes a HEIF or AVIF file's codec streams say they code, read without decoding: the
/// `pic_width_in_luma_samples` and `pic_height_in_luma_samples` of every HEVC sequence parameter set
/// in an `hvcC` property, the largest frame of every AV1 sequence header in an `av1C` property or at
/// the start of an `av01` item's data, and the output size of every `grid` and `iovl` item.
///
/// The `ispe` property a decoder checks is only what the file declares; a coded picture larger than
/// that is allocated in full by the codec before anyone sees its size (a 488-byte AVIF declaring
/// 64x64 decodes to 4096x4096). These are the sizes the codec will allocate.
enum HEIFCodedSize {
    /// The largest coded size in `data`; `nil` when none could be read (the caller then has only the
    /// declared size to go by).
    static func largest(in data: Data) -> PixelSize? {
        let file = HEIFBoxes(bytes: HeaderBytes(data, format: nil))
        // Every read is bounds-checked by HeaderBytes; damage anywhere gives no size rather than a wrong one.
        guard let meta = try? file.child("meta", from: 0, to: file.bytes.count) else { return nil }
        let metaContent = meta.contentStart + 4  // FullBox version and flags
        var sizes: [PixelSize] = []
        if let iprp = try? file.child("iprp", from: metaContent, to: meta.end),
            let ipco = try? file.child("ipco", from: iprp.contentStart, to: iprp.end),
            let properties = try? file.children(from: ipco.contentStart, to: ipco.end)
        {
            for property in properties {
                let content = slice(data, property.contentStart..<property.end)
                switch property.type {
                case "hvcC": sizes += hevcSizes(content)
                // Four bytes of fields, then optional configuration OBUs (often none).
                case "av1C": sizes += av1Sizes(Array(content.dropFirst(4)))
                default: break
                }
            }
        }
        sizes += ((try? itemSizes(file, data: data, metaContent: metaContent, metaEnd: meta.end)) ?? []).map(\.size)
        return sizes.max { $0.pixelCount < $1.pixelCount }
    }

    /// The size each item's decode makes libheif allocate, by item ID: the largest of the `ispe` and the
    /// codec configuration (`hvcC`, `av1C`) associated with it and what its own data gives (an `av01`
    /// item's sequence header, a `grid`'s or `iovl`'s canvas). Items with none of them are left out; so is
    /// everything when `meta` cannot be read.
    static func perItem(in data: Data) -> [Int: PixelSize] {
        let file = HEIFBoxes(bytes: HeaderBytes(data, format: nil))
        guard let meta = try? file.child("meta", from: 0, to: file.bytes.count) else { return [:] }
        let metaContent = meta.contentStart + 4  // FullBox version and flags
        var sizes: [Int: PixelSize] = [:]
        func add(_ size: PixelSize, to item: Int) {
            if size.pixelCount > sizes[item]?.pixelCount ?? -1 { sizes[item] = size }
        }
        if let iprp = try? file.child("iprp", from: metaContent, to: meta.end),
            let ipco = try? file.child("ipco", from: iprp.contentStart, to: iprp.end),
            let properties = try? file.children(from: ipco.contentStart, to: ipco.end),
            let associations = try? file.allAssociations(from: iprp.contentStart, to: iprp.end)
        {
            // Each property's sizes once, however many items share it.
            var propertySizes: [Int: [PixelSize]] = [:]
            for (item, indices) in associations {
                for index in indices where index >= 1 && index <= properties.count {
                    let found =
                        propertySizes[index]
                        ?? {
                            let property = properties[index - 1]
                            let content = slice(data, property.contentStart..<property.end)
                            switch property.type {
                            case "ispe": return (try? file.spatialExtent(property)).map { [$0] } ?? []
                            case "hvcC": return hevcSizes(content)
                            case "av1C": return av1Sizes(Array(content.dropFirst(4)))
                            default: return []
                            }
                        }()
                    propertySizes[index] = found
                    found.forEach { add($0, to: item) }
                }
            }
        }
        for (item, size) in (try? itemSizes(file, data: data, metaContent: metaContent, metaEnd: meta.end)) ?? [] {
            add(size, to: item)
        }
        return sizes
    }

    /// The output size of item `item` when it is a `grid` or an `iovl`, as its description gives it: the
    /// canvas libheif makes for it, whatever `ispe` says or leaves unsaid. `nil` for other items.
    ///
    /// For the header reader, which reads a prefix of the file: bytes that end inside the description (the
    /// `iinf` and `iloc` boxes, the `idat` box, or the item's data in the file) throw `.truncated`. A
    /// description libheif 1.15 refuses throws what its decode does: `.corrupt` for one too short for its
    /// fields (an overlay's include an x and a y for every layer its `dimg` reference lists), one without data
    /// or with an empty canvas, one in a file without an `iref`, a grid whose `dimg` reference lists other than
    /// rows x columns tiles, `.unsupportedFeature` for an overlay of a version other than 0 (a grid's version is
    /// passed over, as libheif does).
    static func derivedImageCanvas(of item: Int, in file: HEIFBoxes, metaContent: Int, metaEnd: Int)
        throws(ImageDecodingError) -> PixelSize?
    {
        let bytes = file.bytes
        // The boxes of meta the description lies in, whole before their fields are trusted; inside them, a
        // read past the bytes present is a length that lies, which completeBoxes makes `.corrupt`.
        func wholeBox(_ type: String) throws(ImageDecodingError) -> HEIFBoxes.Box? {
            guard let box = try file.child(type, from: metaContent, to: metaEnd) else { return nil }
            try bytes.require(box.contentStart, length: box.end - box.contentStart)
            return box
        }
        guard try wholeBox("iinf") != nil,
            let type = try file.completeBoxes({ () throws(ImageDecodingError) in
                try file.itemTypes(metaContent: metaContent, metaEnd: metaEnd)[item]
            }),
            type == "grid" || type == "iovl"
        else { return nil }
        let iloc = try wholeBox("iloc")
        let idat = try wholeBox("idat")
        // An overlay's layers and a grid's tiles are what its first dimg reference lists (libheif 1.15 reads
        // that one, and refuses either without an iref: "No iref box available, but needed for grid image").
        var inputs = 0
        if try wholeBox("iref") != nil {
            inputs = try file.completeBoxes { () throws(ImageDecodingError) in
                try file.references(metaContent: metaContent, metaEnd: metaEnd)
                    .first { $0.type == "dimg" && $0.from == item }?.to.count ?? 0
            }
        } else {
            throw bytes.corrupt("\(type) item \(item) without an iref box")
        }
        let ranges = try file.completeBoxes { () throws(ImageDecodingError) -> [Range<Int>]? in
            guard let iloc else { return nil }
            return try itemExtents(file, iloc: iloc, idat: idat, beyondBytesPresent: true).first { $0.0 == item }?.1
        }
        guard let ranges, !ranges.isEmpty else { throw bytes.corrupt("\(type) item \(item) has no data") }
        // libheif reads the whole description before it parses it; its fields are in the first 18 bytes.
        var content: [UInt8] = []
        for range in ranges {
            try bytes.require(range.lowerBound, length: range.count)
            let part = range.prefix(max(0, 18 - content.count))
            content += try bytes.window(at: part.lowerBound, length: part.count).bytes
        }
        let description = ranges.reduce(0) { $0 + $1.count }
        return try canvas(
            ofDescription: content, length: description, type: type, inputs: inputs, format: bytes.format)
    }

    /// The bytes of `data` in `range`, counted from its start.
    private static func slice(_ data: Data, _ range: Range<Int>) -> [UInt8] {
        Array(data[(data.startIndex + range.lowerBound)..<(data.startIndex + range.upperBound)])
    }

    // MARK: HEVC

    /// The picture sizes of the sequence parameter sets in an HEVCDecoderConfigurationRecord.
    static func hevcSizes(_ record: [UInt8]) -> [PixelSize] {
        sequenceParameterSets(in: record).compactMap { spsSize($0) }
    }

    /// The size of the picture the first sequence parameter set in an HEVCDecoderConfigurationRecord
    /// codes, as the decoder outputs it: its luma samples less its conformance window.
    static func hevcPictureSize(_ record: [UInt8]) -> PixelSize? {
        sequenceParameterSets(in: record).first.flatMap { spsSize($0, conformanceWindow: true) }
    }

    /// The SPS NAL units (type 33) of an HEVCDecoderConfigurationRecord's arrays, in order, up to where
    /// the record ends or stops making sense.
    private static func sequenceParameterSets(in record: [UInt8]) -> [[UInt8]] {
        guard record.count >= 23 else { return [] }
        var units: [[UInt8]] = []
        var offset = 23
        for _ in 0..<Int(record[22]) {
            guard offset + 3 <= record.count else { break }
            let type = record[offset] & 0x3F
            let count = Int(record[offset + 1]) << 8 | Int(record[offset + 2])
            offset += 3
            for _ in 0..<count {
                guard offset + 2 <= record.count else { return units }
                let length = Int(record[offset]) << 8 | Int(record[offset + 1])
                offset += 2
                guard offset + length <= record.count else { return units }
                if type == 33 { units.append(Array(record[offset..<(offset + length)])) }
                offset += length
            }
        }
        return units
    }

    /// `pic_width_in_luma_samples` and `pic_height_in_luma_samples` of an SPS NAL unit (ITU-T H.265 7.3.2.2),
    /// less the conformance window (in chroma samples) with `conformanceWindow`: the size the decoder outputs.
    static func spsSize(_ nal: [UInt8], conformanceWindow: Bool = false) -> PixelSize? {
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
        var separateColourPlanes = false
        if chromaFormat == 3 {
            guard let flag = bits.read(1) else { return nil }
            separateColourPlanes = flag == 1
        }
        guard let width = bits.readExpGolomb(), let height = bits.readExpGolomb(), width > 0, height > 0 else {
            return nil
        }
        if conformanceWindow {
            guard let windowed = bits.read(1) else { return nil }
            guard windowed == 1 else { return PixelSize(width: min(width, 1 << 24), height: min(height, 1 << 24)) }
            guard let left = bits.readExpGolomb(), let right = bits.readExpGolomb(), let top = bits.readExpGolomb(),
                let bottom = bits.readExpGolomb()
            else { return nil }
            // SubWidthC and SubHeightC (H.265 table 6-1): 4:2:0 halves both, 4:2:2 the width only.
            let subWidth = (chromaFormat == 1 || chromaFormat == 2) && !separateColourPlanes ? 2 : 1
            let subHeight = chromaFormat == 1 && !separateColourPlanes ? 2 : 1
            let shown = PixelSize(width: width - subWidth * (left + right), height: height - subHeight * (top + bottom))
            guard shown.width > 0, shown.height > 0 else { return nil }
            return PixelSize(width: min(shown.width, 1 << 24), height: min(shown.height, 1 << 24))
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

    /// The frame size of `av01` item `item` as the sequence header at the start of its data declares it
    /// (`max_frame_width_minus_1 + 1` by `max_frame_height_minus_1 + 1`, AV1 5.5.1), which is what libheif
    /// decodes when the item has no `ispe`; libheif's own files carry no sequence header in `av1C`. `nil`
    /// when the item is not `av01`, or its first kilobyte of data holds no sequence header, or `meta` is
    /// damaged. For the header reader, which reads a prefix of the file: data usually follows `meta` in
    /// `mdat`, so bytes that end before that kilobyte (or the item's data, when shorter) throw `.truncated`.
    static func av1ItemSize(of item: Int, in file: HEIFBoxes, metaContent: Int, metaEnd: Int)
        throws(ImageDecodingError) -> PixelSize?
    {
        do {
            guard try file.itemTypes(metaContent: metaContent, metaEnd: metaEnd)[item] == "av01",
                let iloc = try file.child("iloc", from: metaContent, to: metaEnd)
            else { return nil }
            let idat = try file.child("idat", from: metaContent, to: metaEnd)
            let extents = try itemExtents(file, iloc: iloc, idat: idat, beyondBytesPresent: true)
            guard let ranges = extents.first(where: { $0.0 == item })?.1 else { return nil }
            var content: [UInt8] = []
            for range in ranges where content.count < 1024 {
                let part = range.prefix(1024 - content.count)
                content += try file.bytes.window(at: part.lowerBound, length: part.count).bytes
            }
            return av1Sizes(content).first
        } catch  where error.reason == .truncated {
            throw error
        } catch {
            // Damage is for the decoder to report; the caller falls back as it did before.
            return nil
        }
    }

    /// The sizes items' own data give, found through `iinf` and `iloc`: the sequence header at the start
    /// of every `av01` item, and the output size of every `grid` and `iovl` item (the canvas libheif
    /// allocates for the tiles or the overlaid images, ISO/IEC 23008-12 6.6.2.3 and 6.6.2.2).
    private static func itemSizes(_ file: HEIFBoxes, data: Data, metaContent: Int, metaEnd: Int)
        throws(ImageDecodingError) -> [(item: Int, size: PixelSize)]
    {
        guard let iloc = try file.child("iloc", from: metaContent, to: metaEnd) else { return [] }
        let types = try file.itemTypes(metaContent: metaContent, metaEnd: metaEnd)
        guard types.values.contains(where: { ["av01", "grid", "iovl"].contains($0) }) else { return [] }
        let idat = try file.child("idat", from: metaContent, to: metaEnd)
        // An overlay's description holds an x and a y for each of its layers, a grid's rows and columns its
        // tiles: the items of its first dimg reference.
        var inputs: [Int: Int] = [:]
        for reference in (try? file.references(metaContent: metaContent, metaEnd: metaEnd)) ?? []
        where reference.type == "dimg" && inputs[reference.from] == nil {
            inputs[reference.from] = reference.to.count
        }
        var sizes: [(item: Int, size: PixelSize)] = []
        for (id, ranges) in try itemExtents(file, iloc: iloc, idat: idat) {
            // An item's data is its extents joined, as libheif reads it; the first kilobyte is plenty.
            var content: [UInt8] = []
            for range in ranges where content.count < 1024 {
                content += slice(data, range.prefix(1024 - content.count))
            }
            switch types[id] {
            case "av01":
                // The sequence header comes first; a few hundred bytes are more than enough.
                sizes += av1Sizes(content).map { (id, $0) }
            case "grid", "iovl":
                let length = ranges.reduce(0) { $0 + $1.count }
                if let size = try? canvas(
                    ofDescription: content, length: length, type: types[id] ?? "", inputs: inputs[id], format: nil)
                {
                    sizes.append((id, size))
                }
            default:
                break
            }
        }
        return sizes
    }

    /// The output width and height of a `grid` or `iovl` description of `length` bytes whose first bytes are
    /// `content`, checked as libheif 1.15 parses it (ISO/IEC 23008-12 6.6.2.3 and 6.6.2.2): a grid has its
    /// version, its flags (bit 0: 32-bit sizes), rows - 1 and columns - 1 before the width and height, an
    /// overlay its version (0), its flags and four 16-bit fill values, and after its width and height an x and
    /// a y for each of its layers. `inputs` is the number of items its first `dimg` reference lists: an
    /// overlay's layers (none when `nil`), a grid's tiles, which must be rows x columns (not checked when
    /// `nil`). Errors name `format`.
    static func canvas(ofDescription content: [UInt8], length: Int, type: String, inputs: Int?, format: ImageFormat?)
        throws(ImageDecodingError) -> PixelSize
    {
        let layers = type == "iovl" ? inputs ?? 0 : 0
        func corrupt(_ message: String) -> ImageDecodingError {
            ImageDecodingError(format: format, reason: .corrupt(message))
        }
        let offset = type == "grid" ? 4 : 10
        // libheif checks a grid for 8 bytes and an overlay for 10 before it reads the flags.
        guard length >= (type == "grid" ? 8 : 10), content.count >= 2 else {
            throw corrupt("\(type) description of \(length) bytes")
        }
        if type == "iovl" && content[0] != 0 {
            throw ImageDecodingError(
                format: format, reason: .unsupportedFeature("overlay description version \(content[0])"))
        }
        let fieldLength = content[1] & 1 == 1 ? 4 : 2
        guard length >= offset + 2 * fieldLength, content.count >= offset + 2 * fieldLength else {
            throw corrupt("\(type) description of \(length) bytes with \(8 * fieldLength)-bit sizes")
        }
        // libheif 1.15 wants every layer's offsets there before it reads the canvas ("Overlay image data
        // incomplete"); an overlay without layers needs none.
        if type == "iovl", length < offset + 2 * fieldLength * (1 + layers) {
            throw corrupt(
                "overlay description of \(length) bytes for \(layers) layers with \(8 * fieldLength)-bit fields")
        }
        let width = content[offset..<(offset + fieldLength)].reduce(0) { $0 << 8 | Int($1) }
        let height = content[(offset + fieldLength)..<(offset + 2 * fieldLength)].reduce(0) { $0 << 8 | Int($1) }
        guard width > 0 && height > 0 else { throw corrupt("\(type) canvas of \(width)x\(height)") }
        // libheif 1.15 decodes a grid only with as many tiles as it has cells ("Missing grid images").
        if type == "grid", let inputs {
            let (rows, columns) = (Int(content[2]) + 1, Int(content[3]) + 1)
            guard inputs == rows * columns else {
                throw corrupt("grid of \(rows) x \(columns) tiles with \(inputs) in its dimg reference")
            }
        }
        return PixelSize(width: width, height: height)
    }

    /// The extents of each item stored in the file (construction method 0) or in `idat` (1), in order,
    /// from `iloc`, clipped to the bytes present; with `beyondBytesPresent`, extents in the file keep their
    /// declared ends and those that start past the bytes are kept too (the header reader, which reads a
    /// prefix of the file, waits for them), but for an extent that runs to the end of the file.
    private static func itemExtents(
        _ file: HEIFBoxes, iloc: HEIFBoxes.Box, idat: HEIFBoxes.Box?, beyondBytesPresent: Bool = false
    ) throws(ImageDecodingError) -> [(Int, [Range<Int>])] {
        let bytes = file.bytes
        var offset = iloc.contentStart
        // The fields one after another; eight-byte ones can hold anything, so past Int32 they are damage.
        func field(_ length: Int) throws(ImageDecodingError) -> Int {
            guard length > 0 else { return 0 }
            let value = try bytes.unsigned(at: offset, length: length, bigEndian: true)
            offset += length
            guard value <= UInt64(Int32.max) else { throw bytes.corrupt("iloc field of \(value)") }
            return Int(value)
        }
        let version = try field(1)
        _ = try field(3)  // flags
        let sizes = try field(1)
        let moreSizes = try field(1)
        let (offsetSize, lengthSize, baseOffsetSize) = (sizes >> 4, sizes & 0x0F, moreSizes >> 4)
        let indexSize = version == 1 || version == 2 ? moreSizes & 0x0F : 0
        var extents: [(Int, [Range<Int>])] = []
        for _ in 0..<(try field(version < 2 ? 2 : 4)) {
            let id = try field(version < 2 ? 2 : 4)
            let method = version == 1 || version == 2 ? try field(2) & 0x0F : 0
            _ = try field(2)  // data reference index
            let base = try field(baseOffsetSize)
            // What the offsets count from: the file, or the content of idat.
            let fileEnd = beyondBytesPresent ? Int(Int32.max) * 2 : bytes.count
            let container: Range<Int>? =
                method == 0 ? 0..<fileEnd : method == 1 ? idat.map { $0.contentStart..<$0.end } : nil
            var ranges: [Range<Int>] = []
            var covered = 0
            // With index, offset and length sizes of 0 an extent takes no bytes of the file, so its count
            // costs nothing to state; all such extents of an item are the same one.
            let extentTakesNoBytes = indexSize + offsetSize + lengthSize == 0
            for _ in 0..<(try field(2)) {
                _ = try field(indexSize)
                let start = base + (try field(offsetSize))
                let length = try field(lengthSize)
                // Only an item's first kilobyte is read: extents past it are walked over, not kept.
                var added = 0
                if covered < 1024, let container, start <= container.count {
                    let available = container.count - start
                    let lower = container.lowerBound + start
                    // An extent of length 0 runs to the end of its container: of the file, as far as it is here.
                    let end =
                        length == 0 || length > available ? min(container.upperBound, bytes.count) : lower + length
                    ranges.append(lower..<max(lower, end))
                    added = ranges[ranges.count - 1].count
                    covered += added
                }
                // Repeating an extent that takes no bytes adds nothing once it adds no data or the first
                // kilobyte is there: the walk would only spin, through billions of them in a small file.
                if extentTakesNoBytes && (added == 0 || covered >= 1024) { break }
            }
            if !ranges.isEmpty { extents.append((id, ranges)) }
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
