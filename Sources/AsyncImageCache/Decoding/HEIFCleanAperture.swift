/// An HEIF or AVIF item's clean aperture (`clap`): the part of the decoded image that is shown.
///
/// Encoders write one when the codec's picture is larger than the image, padded to whole coding
/// blocks (libheif does, for sizes HEVC cannot code exactly), or to crop without re-encoding. HEIF
/// applies it first, before `irot` and `imir`. Its numbers are fractions: a width and a height, and
/// the offset of its centre from the centre of the image.
struct HEIFCleanAperture: Equatable {
    /// A fraction as the box stores it; the denominator is positive once read.
    struct Fraction: Equatable {
        var numerator: Int
        var denominator: Int
    }

    var width: Fraction
    var height: Fraction
    var horizontalOffset: Fraction
    var verticalOffset: Fraction
    /// What the item's `irot` and `imir` associated before the aperture do to the picture first: the
    /// aperture's numbers are measured along the sides of the picture so turned (HEIF applies an item's
    /// transformations in the order they are associated; MIAF files put the aperture first, `.up`).
    var precedingOrientation = ImageOrientation.up

    /// The eight fields of a `clap` box's content: width, height, horizontal and vertical offset, each
    /// a 32-bit numerator and denominator; the offsets' numerators are signed. `nil` for a zero
    /// denominator or a width or height that is not positive: such a box is ignored.
    init?(fields: [Int]) {
        guard fields.count == 8 else { return nil }
        func signed(_ value: Int) -> Int { value >= 1 << 31 ? value - (1 << 32) : value }
        width = Fraction(numerator: fields[0], denominator: fields[1])
        height = Fraction(numerator: fields[2], denominator: fields[3])
        horizontalOffset = Fraction(numerator: signed(fields[4]), denominator: fields[5])
        verticalOffset = Fraction(numerator: signed(fields[6]), denominator: fields[7])
        // The width and height numerators are unsigned in the standard; libheif reads them signed.
        let widthAndHeight = [width, height].allSatisfy { $0.numerator > 0 && $0.numerator < 1 << 31 }
        guard widthAndHeight, [width, height, horizontalOffset, verticalOffset].allSatisfy({ $0.denominator > 0 })
        else { return nil }
    }

    /// The size the aperture shows of an image declared as `size` (its `ispe`): its width and height
    /// rounded, at most the image's. The header's size, read without decoding: it leaves the offsets
    /// out because libheif 1.15 writes the shown size as the `ispe` of the files it crops, where the
    /// offsets only make sense against the decoded picture. For an aperture inside the image, as the
    /// standard requires, it is the size ``crop(in:)`` gives.
    func shownSize(of size: PixelSize) -> PixelSize? {
        guard let shownWidth = Self.libheifRounded(width), let shownHeight = Self.libheifRounded(height) else {
            return nil
        }
        let shown = PixelSize(width: min(shownWidth, size.width), height: min(shownHeight, size.height))
        return shown.width > 0 && shown.height > 0 ? shown : nil
    }

    /// The size the aperture shows, in stored orientation, of an image declared as `size` in stored
    /// orientation: ``shownSize(of:)`` measured along the sides of the picture as
    /// ``precedingOrientation`` turns it, turned back.
    func shownStoredSize(of size: PixelSize) -> PixelSize? {
        let turned = precedingOrientation.swapsWidthAndHeight
        return shownSize(of: turned ? size.transposed : size).map { turned ? $0.transposed : $0 }
    }

    /// The rectangle of a decoded picture of `decoded` pixels (stored orientation) that the aperture shows,
    /// in stored coordinates: ``crop(in:)`` of the picture as ``precedingOrientation`` turns it, with the
    /// size ``shownSize(of:)`` promises for the `declared` size (stored orientation; its `ispe`) where the
    /// picture's edge cuts the crop short (the aperture reaching past it, against the standard: the crop
    /// grows back inwards), mapped back onto the stored pixels. `nil` where ``crop(in:)`` is.
    func storedCrop(in decoded: PixelSize, declared: PixelSize) -> (x: Int, y: Int, width: Int, height: Int)? {
        let turn = precedingOrientation
        let seen = turn.displaySize(ofStored: decoded)
        guard var crop = crop(in: seen) else { return nil }
        if let promised = shownSize(of: turn.displaySize(ofStored: declared)) {
            crop.width = min(promised.width, seen.width)
            crop.height = min(promised.height, seen.height)
            crop.x = min(crop.x, seen.width - crop.width)
            crop.y = min(crop.y, seen.height - crop.height)
        }
        let first = turn.storedPosition(ofDisplayed: crop.x, crop.y, in: decoded)
        let last = turn.storedPosition(ofDisplayed: crop.x + crop.width - 1, crop.y + crop.height - 1, in: decoded)
        let (x, y) = (min(first.x, last.x), min(first.y, last.y))
        return (x, y, max(first.x, last.x) - x + 1, max(first.y, last.y) - y + 1)
    }

    /// The rectangle of a decoded image of `size` that the aperture shows, computed as libheif 1.15
    /// crops: the first column is the aperture's left edge rounded toward zero, the first row its top
    /// edge rounded half up, then the last column and row the first plus the width or height rounded (all
    /// with libheif's rounding, which divides toward zero), clipped to the image. `nil` when libheif
    /// would refuse it (nothing left, or a single column or row) or the numbers overflow. libheif does
    /// its arithmetic in 32 bits and coarsens fractions past 65,536; such numbers may crop otherwise.
    func crop(in size: PixelSize) -> (x: Int, y: Int, width: Int, height: Int)? {
        guard let leftEdge = Self.edge(extent: size.width, length: width, offset: horizontalOffset),
            let topEdge = Self.edge(extent: size.height, length: height, offset: verticalOffset),
            let doubledTop = Self.multiply(topEdge.numerator, 2).flatMap({ Self.add($0, topEdge.denominator) }),
            let doubledDenominator = Self.multiply(topEdge.denominator, 2)
        else { return nil }
        // Toward zero for the column; half up (toward zero after adding a half) for the row.
        let left = leftEdge.numerator / leftEdge.denominator
        let top = doubledTop / doubledDenominator
        guard let right = Self.lastIndex(first: left, length: width),
            let bottom = Self.lastIndex(first: top, length: height)
        else { return nil }
        let (x, y) = (max(0, left), max(0, top))
        let (lastColumn, lastRow) = (min(size.width - 1, right), min(size.height - 1, bottom))
        guard x < lastColumn, y < lastRow else { return nil }
        return (x, y, lastColumn - x + 1, lastRow - y + 1)
    }

    /// The aperture's first column (or row) before rounding, offset + (extent - 1) / 2 - (length - 1) / 2,
    /// as a fraction over 2 * offset.d * length.d.
    private static func edge(extent: Int, length: Fraction, offset: Fraction) -> Fraction? {
        let (o, od, l, ld) = (offset.numerator, offset.denominator, length.numerator, length.denominator)
        guard let scaledOffset = multiply(2 * o, ld),
            let extentInLength = multiply(extent, ld).flatMap({ subtract($0, l) }),
            let scaledExtent = multiply(extentInLength, od),
            let numerator = add(scaledOffset, scaledExtent),
            let denominator = multiply(2 * od, ld)
        else { return nil }
        return Fraction(numerator: numerator, denominator: denominator)
    }

    /// libheif's last column (or row): `length - 1 + first`, as the fraction (n - d + first * d) / d,
    /// rounded its way.
    private static func lastIndex(first: Int, length: Fraction) -> Int? {
        guard let scaledFirst = multiply(first, length.denominator),
            let numerator = subtract(length.numerator, length.denominator).flatMap({ add($0, scaledFirst) })
        else { return nil }
        return libheifRounded(Fraction(numerator: numerator, denominator: length.denominator))
    }

    /// libheif's rounding: (n + d / 2) / d, dividing toward zero; half up for positive fractions.
    private static func libheifRounded(_ fraction: Fraction) -> Int? {
        add(fraction.numerator, fraction.denominator / 2).map { $0 / fraction.denominator }
    }

    private static func multiply(_ a: Int, _ b: Int) -> Int? {
        let (value, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? nil : value
    }

    private static func add(_ a: Int, _ b: Int) -> Int? {
        let (value, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : value
    }

    private static func subtract(_ a: Int, _ b: Int) -> Int? {
        let (value, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? nil : value
    }
}

extension [HEIFCleanAperture] {
    /// The size the apertures show, one after another, of an image declared as `size` in stored
    /// orientation: each ``HEIFCleanAperture/shownStoredSize(of:)`` of what the ones before it left (an
    /// aperture that would show nothing leaves it as it was). `size` when there are none.
    func shownStoredSize(of size: PixelSize) -> PixelSize {
        reduce(size) { shown, aperture in aperture.shownStoredSize(of: shown) ?? shown }
    }

    /// The rectangle of a decoded picture of `decoded` pixels (stored orientation) that the apertures show,
    /// one inside the other, in stored coordinates: each ``HEIFCleanAperture/storedCrop(in:declared:)`` of
    /// what the ones before it left, declared as they left the `declared` size. `nil` when one of them is.
    func storedCrop(in decoded: PixelSize, declared: PixelSize) -> (x: Int, y: Int, width: Int, height: Int)? {
        var crop = (x: 0, y: 0, width: decoded.width, height: decoded.height)
        var declared = declared
        for aperture in self {
            guard
                let inner = aperture.storedCrop(
                    in: PixelSize(width: crop.width, height: crop.height), declared: declared)
            else { return nil }
            crop = (crop.x + inner.x, crop.y + inner.y, inner.width, inner.height)
            declared = aperture.shownStoredSize(of: declared) ?? declared
        }
        return crop
    }
}

extension HEIFBoxes {
    /// The usable clean apertures among `properties` (an item's, in the order they are associated), in that
    /// order, each with the `irot` and `imir` associated before it. The libheif builds before Debian's
    /// 1.15.1-1+deb12u3 cropped by every one in turn; that one refuses an item with more than one, and so do
    /// the header and the decoder (``HEIFBoxes/repeatedTransformation(among:)``).
    func cleanApertures(among properties: [Box]) throws(ImageDecodingError) -> [HEIFCleanAperture] {
        var apertures: [HEIFCleanAperture] = []
        for (index, clap) in properties.enumerated() where clap.type == "clap" {
            guard clap.end - clap.contentStart >= 32 else { throw bytes.corrupt("clap of the wrong length") }
            var fields: [Int] = []
            for field in 0..<8 { fields.append(try bytes.uint32BE(at: clap.contentStart + field * 4)) }
            guard var aperture = HEIFCleanAperture(fields: fields) else { continue }
            aperture.precedingOrientation = try orientation(from: Array(properties[..<index]))
            apertures.append(aperture)
        }
        return apertures
    }
}
