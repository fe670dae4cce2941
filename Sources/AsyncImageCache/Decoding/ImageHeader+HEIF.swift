import Foundation

extension ImageHeader {
    private static let avifBrands: Set<String> = ["avif", "avis"]
    private static let heifBrands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"]

    /// The format an ISO-BMFF `ftyp` box announces: its major brand, or for the generic brands
    /// (`mif1`, `msf1`, ...) the first AVIF or HEIF brand among the compatible ones.
    static func isobmffFormat(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageFormat {
        let major = try bytes.fourCC(at: 8)
        if avifBrands.contains(major) { return .avif }
        if heifBrands.contains(major) && !major.hasPrefix("m") { return .heif }
        // Errors from here on name HEIF when the major brand already says it is one.
        let reader = heifBrands.contains(major) ? bytes.claiming(.heif) : bytes
        let size = try reader.uint32BE(at: 0)
        guard size >= 16 else { throw reader.corrupt("ftyp box of \(size) bytes") }
        var isHEIF = heifBrands.contains(major)
        for offset in stride(from: 16, to: size - 3, by: 4) {
            let brand = try reader.fourCC(at: offset)
            if avifBrands.contains(brand) { return .avif }
            isHEIF = isHEIF || heifBrands.contains(brand)
        }
        guard isHEIF else { throw ImageDecodingError(format: nil, reason: .unrecognizedFormat) }
        return .heif
    }

    /// Reads an HEIF or AVIF file's size from the `ispe` property of its primary item, cropped by its
    /// clean aperture (`clap`) when it has one, and its orientation from that item's `irot` and `imir`
    /// properties, found in `meta` / `iprp`.
    ///
    /// A primary `grid` or `iovl` item without an `ispe` of its own takes its size from its description
    /// (until that is all there, the header is `.truncated`; one libheif refuses is the error it gives),
    /// an HEVC one from its sequence parameter set and an AV1 one from the sequence header at the start of
    /// its data (until that data is there, the header is `.truncated`), with its own `irot`, `imir` and
    /// `clap`. Otherwise, when the primary item cannot be matched to its size, the largest `ispe` is taken,
    /// upright and uncropped.
    ///
    /// A primary item with more than one `irot`, `imir` or `clap` is `.corrupt`, as libheif has it
    /// (``HEIFBoxes/repeatedTransformation(among:)``).
    static func parseHEIF(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageHeader {
        let (file, properties, extent) = try heifItem(bytes, id: nil)
        if let type = HEIFBoxes.repeatedTransformation(among: properties) {
            throw bytes.corrupt("more than one \(type) associated with the primary item")
        }
        return try file.completeBoxes { () throws(ImageDecodingError) -> ImageHeader in
            let orientation = try file.orientation(from: properties)
            let shown = try file.cleanApertures(among: properties).shownStoredSize(of: extent)
            return try validated(bytes, width: shown.width, height: shown.height, orientation: orientation)
        }
    }

    /// The clean apertures of an item of an HEIF or AVIF file (by default its primary item), in the order
    /// they are associated with it; none when it has none, or the file cannot be read that far.
    static func heifCleanApertures(in data: Data, item: Int? = nil) -> [HEIFCleanAperture] {
        let bytes = HeaderBytes(data, format: nil)
        guard let (file, properties, _) = try? heifItem(bytes, id: item) else { return [] }
        return (try? file.completeBoxes { () throws(ImageDecodingError) in try file.cleanApertures(among: properties) })
            ?? []
    }

    /// The first of `irot`, `imir` and `clap` that the primary item of an HEIF or AVIF file has more than
    /// once (``HEIFBoxes/repeatedTransformation(among:)``); `nil` when none is, or the file cannot be read
    /// that far.
    static func heifRepeatedTransformation(in data: Data) -> String? {
        guard let (_, properties, _) = try? heifItem(HeaderBytes(data, format: nil), id: nil) else { return nil }
        return HEIFBoxes.repeatedTransformation(among: properties)
    }

    /// Whether the primary item of an HEIF or AVIF file is coded monochrome, as its `hvcC` (chroma format
    /// 0) or `av1C` (`mono_chrome`) says; `false` when it has neither (a grid, whose tiles hold them) or the
    /// file cannot be read that far.
    static func heifIsMonochrome(in data: Data) -> Bool {
        guard let (file, properties, _) = try? heifItem(HeaderBytes(data, format: nil), id: nil) else { return false }
        if let hvcC = properties.first(where: { $0.type == "hvcC" }) {
            // configurationVersion, profile (1), compatibility flags (4), constraint flags (6), level (1),
            // min_spatial_segmentation (2), parallelismType (1), then 6 reserved bits and chromaFormat.
            return (try? file.bytes.byte(at: hvcC.contentStart + 16)).map { $0 & 0x03 == 0 } ?? false
        }
        if let av1C = properties.first(where: { $0.type == "av1C" }) {
            // marker and version, profile and level, then tier, high_bitdepth, twelve_bit, mono_chrome.
            return (try? file.bytes.byte(at: av1C.contentStart + 2)).map { $0 & 0x10 != 0 } ?? false
        }
        return false
    }

    /// The orientation (`irot` and `imir`) of an item of an HEIF or AVIF file (by default its primary item),
    /// `.up` when it cannot be matched to its properties; `nil` when the file cannot be read that far.
    static func heifOrientation(in data: Data, item: Int? = nil) -> ImageOrientation? {
        let bytes = HeaderBytes(data, format: nil)
        guard let (file, properties, _) = try? heifItem(bytes, id: item) else { return nil }
        return try? file.completeBoxes { () throws(ImageDecodingError) in try file.orientation(from: properties) }
    }

    /// The size `item`'s picture is coded at, as libheif decodes it: a `grid`'s or `iovl`'s description, an
    /// HEVC image's parameter set (in its `hvcC`, among `properties`), an AV1 image's sequence header, in that
    /// order; `nil` when none says. Until a grid's description is all there, `.truncated`; so is an AV1 item's
    /// prefix without its sequence header, which is in the item's data, outside the boxes that must be complete.
    private static func codedSize(
        of item: Int?, among properties: [HEIFBoxes.Box], in file: HEIFBoxes, metaContent: Int, metaEnd: Int
    ) throws(ImageDecodingError) -> PixelSize? {
        if let item,
            let canvas = try HEIFCodedSize.derivedImageCanvas(
                of: item, in: file, metaContent: metaContent, metaEnd: metaEnd)
        {
            return canvas
        }
        if let hvcC = properties.first(where: { $0.type == "hvcC" }),
            let size = HEIFCodedSize.hevcPictureSize(
                [UInt8](try file.bytes.window(at: hvcC.contentStart, length: hvcC.end - hvcC.contentStart).bytes))
        {
            return size
        }
        guard let item else { return nil }
        return try HEIFCodedSize.av1ItemSize(of: item, in: file, metaContent: metaContent, metaEnd: metaEnd)
    }

    /// The properties associated with the item `id` (`nil`: the primary item), and the size its `ispe`
    /// declares, or without one, what a `grid`'s or `iovl`'s description, an HEVC image's parameter set or an
    /// AV1 image's sequence header gives. When the item cannot be matched to its size that way: no
    /// properties, and the largest `ispe`.
    private static func heifItem(
        _ bytes: HeaderBytes, id: Int?
    ) throws(ImageDecodingError) -> (HEIFBoxes, properties: [HEIFBoxes.Box], extent: PixelSize) {
        let file = HEIFBoxes(bytes: bytes)
        // The file's length is unknown while reading a prefix, so top-level boxes have no end.
        guard let meta = try file.child("meta", from: 0, to: Int.max) else { throw bytes.corrupt("no meta box") }
        // A meta of size 0 runs to the end of the file (walked without an end, it ends at Int.max); libheif 1.15
        // refuses one wherever it lies ("No 'meta' box"), and so the decoder does (``HEIFBoxes/metaRunsToTheEnd()``).
        guard meta.end != Int.max else { throw bytes.corrupt(HEIFBoxes.metaOfSizeZero) }
        let metaContent = meta.contentStart + 4  // FullBox version and flags
        guard let properties = try file.child("iprp", from: metaContent, to: meta.end) else {
            throw bytes.corrupt("no item properties")
        }
        // Everything below reads inside iprp, so wait for all of it before trusting its lengths.
        try bytes.require(properties.contentStart, length: properties.end - properties.contentStart)
        var item = id
        if item == nil, let pitm = try file.child("pitm", from: metaContent, to: meta.end) {
            item = try file.primaryItemID(pitm)
        }
        let (all, chosen) = try file.completeBoxes { () throws(ImageDecodingError) in
            guard let container = try file.child("ipco", from: properties.contentStart, to: properties.end) else {
                throw bytes.corrupt("no item property container")
            }
            let all = try file.children(from: container.contentStart, to: container.end)
            var chosen: [HEIFBoxes.Box] = []
            if let item {
                let indices = try file.associations(of: item, from: properties.contentStart, to: properties.end)
                chosen = indices.compactMap { $0 >= 1 && $0 <= all.count ? all[$0 - 1] : nil }
            }
            return (all, chosen)
        }
        if let size = try file.completeBoxes({ () throws(ImageDecodingError) in
            try file.largestExtent(among: chosen)
        }) {
            // libheif 1.15's encoder, asked for a quarter turn (as GIMP and ImageMagick ask it), writes the ispe
            // after the turn while the picture is coded before it, as libheif decodes and shows it: an HEVC
            // image's parameter set, an AV1 image's sequence header or (for a picture with an odd side, which
            // it writes as a grid of one tile) a grid's description, giving the ispe's sides the other way
            // round, says so. The AV1 header is in the item's data: a prefix without it is `.truncated`.
            if (try? file.orientation(from: chosen))?.swapsWidthAndHeight == true,
                let coded = try codedSize(
                    of: item, among: chosen, in: file, metaContent: metaContent, metaEnd: meta.end),
                coded != size, coded == size.transposed
            {
                return (file, chosen, coded)
            }
            return (file, chosen, size)
        }
        // Without the ispe HEIF asks of it, an image is as large as it is coded (``codedSize(of:among:in:metaContent:metaEnd:)``),
        // which is what libheif makes of it; a grid's or overlay's irot, imir and clap are its own all the same.
        // A damaged grid description is the decode's error.
        if let size = try codedSize(of: item, among: chosen, in: file, metaContent: metaContent, metaEnd: meta.end) {
            return (file, chosen, size)
        }
        return try file.completeBoxes { () throws(ImageDecodingError) in
            guard let size = try file.largestExtent(among: all) else { throw bytes.corrupt("no ispe property") }
            return (file, [], size)
        }
    }
}
