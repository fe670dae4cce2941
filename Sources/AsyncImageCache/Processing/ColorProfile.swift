import Foundation

/// An ICC profile of the matrix-and-curves kind that phones and cameras embed (Display P3, Adobe
/// RGB, ProPhoto, sRGB itself), or a gray profile of one tone curve (what Photoshop embeds in
/// grayscale files, such as its Dot Gain ones), reduced to what converting its pixels to sRGB takes:
/// a tone curve per channel and a 3x3 matrix into sRGB's linear light.
///
/// The Linux decoders hand out samples as stored, so a photo with a Display P3 profile would look
/// washed out read as sRGB; the store converts such a photo after resizing it, when the pixels are
/// fewest (ImageIO converts on Apple platforms). Profiles of other kinds (lookup tables only,
/// CMYK, Lab) and damaged ones give `nil`, and the pixels stay as they are.
///
/// The conversion is colorimetric: colours sRGB can show keep their appearance, others are clipped
/// channel by channel. Both white points are D50 in the profile connection space, so white stays white.
/// A gray profile's curve gives the luminance of a gray that the connection space puts on its white,
/// so it converts with sRGB's own colorants: the same curve on all three channels and no mixing.
struct ColorProfile: Sendable {
    /// The profile's tone curves, red, green and blue.
    let curves: [ToneCurve]
    /// The profile's colorants (the columns: red, green, blue) in the D50 connection space.
    let colorants: [[Double]]
    /// Whether the profile describes gray samples (ICC colour space `GRAY`), for grayscale images only.
    let isGray: Bool

    /// Parses `iccData`; `nil` unless it is a well-formed RGB profile with matrix colorants and tone
    /// curves or a gray profile with a tone curve.
    init?(iccData: Data) {
        // A matrix-and-curves profile takes kilobytes; a larger one is not parsed on every render.
        guard iccData.count <= Self.largestProfile else { return nil }
        let bytes = ICCBytes([UInt8](iccData))
        guard let (colorSpace, connectionSpace, tags) = bytes.header(),
            colorSpace == "RGB " || colorSpace == "GRAY", connectionSpace == "XYZ "
        else { return nil }
        isGray = colorSpace == "GRAY"
        if isGray {
            guard let element = tags["kTRC"], let curve = ToneCurve(bytes, at: element.offset, size: element.size)
            else { return nil }
            (colorants, curves) = (Self.sRGBColorants, [curve, curve, curve])
            return
        }
        var colorants: [[Double]] = []
        var curves: [ToneCurve] = []
        var curvesByOffset: [Int: ToneCurve] = [:]  // the three channels often share one element
        for channel in ["r", "g", "b"] {
            guard let colorant = tags[channel + "XYZ"].flatMap({ bytes.xyz(at: $0.offset, size: $0.size) }),
                let element = tags[channel + "TRC"],
                let curve = curvesByOffset[element.offset] ?? ToneCurve(bytes, at: element.offset, size: element.size)
            else { return nil }
            curvesByOffset[element.offset] = curve
            colorants.append(colorant)
            curves.append(curve)
        }
        self.colorants = colorants
        self.curves = curves
        guard Self.matrix(colorants).inverted != nil else { return nil }
    }

    /// A profile for primaries and a white point given as chromaticities (x, y), with `curve` for every
    /// channel: what a HEIF's or AVIF's `nclx` colour description says. The colorants are adapted to
    /// D50 with the Bradford transform, as profile makers do; `nil` for degenerate chromaticities.
    init?(
        red: (Double, Double), green: (Double, Double), blue: (Double, Double), white: (Double, Double),
        curve: ToneCurve
    ) {
        func xyz(_ chromaticity: (Double, Double)) -> [Double]? {
            let (x, y) = chromaticity
            guard y > 0, x >= 0, x + y <= 1 else { return nil }
            return [x / y, 1, (1 - x - y) / y]
        }
        guard let r = xyz(red), let g = xyz(green), let b = xyz(blue), let w = xyz(white),
            let unscaled = Self.matrix([r, g, b]).inverted
        else { return nil }
        // Scale each primary so that the three add up to the white point.
        let scales = (0..<3).map { row in (0..<3).reduce(0) { $0 + unscaled.rows[row][$1] * w[$1] } }
        let bradford = Matrix3(rows: [
            [0.8951, 0.2664, -0.1614], [-0.7502, 1.7135, 0.0367], [0.0389, -0.0685, 1.0296],
        ])
        func apply(_ matrix: Matrix3, _ vector: [Double]) -> [Double] {
            (0..<3).map { row in (0..<3).reduce(0) { $0 + matrix.rows[row][$1] * vector[$1] } }
        }
        let (source, target) = (apply(bradford, w), apply(bradford, [0.9642, 1.0, 0.8249]))
        guard source.allSatisfy({ $0 != 0 }), let inverseBradford = bradford.inverted else { return nil }
        let diagonal = Matrix3(rows: (0..<3).map { i in (0..<3).map { i == $0 ? target[i] / source[i] : 0 } })
        let adaptation = inverseBradford.multiplied(by: diagonal).multiplied(by: bradford)
        let colorants = [r, g, b].enumerated().map { index, primary in
            apply(adaptation, primary.map { $0 * scales[index] })
        }
        guard Self.matrix(colorants).inverted != nil, colorants.joined().allSatisfy(\.isFinite) else { return nil }
        self.colorants = colorants
        self.curves = [curve, curve, curve]
        isGray = false
    }

    /// The largest ICC profile parsed, 1 MiB: the matrix-and-curves kind takes a few kilobytes (its longest
    /// curves, 4,096 entries, 8 KB each), and a profile is read again for every render.
    static let largestProfile = 1 << 20

    /// sRGB's colorants in the D50 connection space, as the sRGB profile of IEC 61966-2-1 gives them.
    static let sRGBColorants: [[Double]] = [
        [0.436066, 0.222488, 0.013916], [0.385147, 0.716873, 0.097076], [0.143066, 0.060608, 0.714096],
    ]

    /// The matrix whose columns are `colorants`: linear RGB to XYZ.
    static func matrix(_ colorants: [[Double]]) -> Matrix3 {
        Matrix3(rows: (0..<3).map { row in (0..<3).map { colorants[$0][row] } })
    }

    /// Linear light in this profile's RGB to linear sRGB.
    var toLinearSRGB: Matrix3 {
        Self.matrix(Self.sRGBColorants).inverted!.multiplied(by: Self.matrix(colorants))
    }

    /// Whether the profile is sRGB's, give or take the rounding of its fixed-point numbers, so that
    /// converting is skipped: its matrix into sRGB is the identity within 0.002 (half a level at white),
    /// and each curve, re-encoded with sRGB's, moves no 8-bit level by more than one.
    var isSRGB: Bool {
        let matrix = toLinearSRGB
        for row in 0..<3 {
            for column in 0..<3 where abs(matrix.rows[row][column] - (row == column ? 1 : 0)) > 0.002 {
                return false
            }
        }
        return curves.allSatisfy { curve in
            (0...255).allSatisfy { level in
                let reencoded = (SRGBCurve.encoded(curve.linear(Double(level) / 255)) * 255).rounded()
                return abs(reencoded - Double(level)) <= 1
            }
        }
    }
}

/// One channel's ICC tone curve: an encoded value from 0 to 1 to linear light.
struct ToneCurve: Sendable {
    private enum Shape: Sendable {
        case gamma(Double)
        case table([Double])
        /// ICC's parametric curve (`para`), parameters g, a, b, c, d, e, f (missing ones as the type defines).
        case parametric(type: Int, [Double])
    }

    private let shape: Shape

    private init(_ shape: Shape) { self.shape = shape }

    /// A pure power.
    static func gamma(_ gamma: Double) -> ToneCurve { ToneCurve(.gamma(gamma)) }

    /// sRGB's curve, as ICC's parametric curve of type 3.
    static let sRGB = ToneCurve(.parametric(type: 3, [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]))

    /// Reads a `curv` or `para` element of `size` bytes at `offset`.
    init?(_ bytes: ICCBytes, at offset: Int, size: Int) {
        guard size >= 12, bytes.contains(offset, length: size) else { return nil }
        switch bytes.signature(at: offset) {
        case "curv":
            guard let count = bytes.uint32(at: offset + 8), Int(count) <= (size - 12) / 2, count <= 65_536 else {
                return nil
            }
            if count == 0 {
                shape = .gamma(1)
            } else if count == 1 {
                guard let raw = bytes.uint16(at: offset + 12), raw > 0 else { return nil }
                shape = .gamma(Double(raw) / 256)
            } else {
                shape = .table((0..<Int(count)).map { Double(bytes.uint16(at: offset + 12 + 2 * $0)!) / 65535 })
            }
        case "para":
            let counts = [1, 3, 4, 5, 7]
            guard let type = bytes.uint16(at: offset + 8).map(Int.init), type < counts.count,
                size >= 12 + 4 * counts[type]
            else { return nil }
            let parameters = (0..<counts[type]).map { bytes.s15Fixed16(at: offset + 12 + 4 * $0)! }
            guard parameters[0] > 0, type == 0 || parameters[1] != 0 else { return nil }
            shape = .parametric(type: type, parameters)
        default:
            return nil
        }
    }

    /// The linear light of `encoded` (0...1), clamped to 0...1.
    func linear(_ encoded: Double) -> Double {
        let x = min(max(encoded, 0), 1)
        let y: Double
        switch shape {
        case .gamma(let gamma):
            y = pow(x, gamma)
        case .table(let table):
            let position = x * Double(table.count - 1)
            let index = min(Int(position), table.count - 2)
            let fraction = position - Double(index)
            y = table[index] + (table[index + 1] - table[index]) * fraction
        case .parametric(let type, let p):
            let g = p[0]
            func power(_ base: Double) -> Double { base > 0 ? pow(base, g) : 0 }
            switch type {
            case 0: y = pow(x, g)
            case 1: y = x >= -p[2] / p[1] ? power(p[1] * x + p[2]) : 0
            case 2: y = x >= -p[2] / p[1] ? power(p[1] * x + p[2]) + p[3] : p[3]
            case 3: y = x >= p[4] ? power(p[1] * x + p[2]) : p[3] * x
            default: y = x >= p[4] ? power(p[1] * x + p[2]) + p[5] : p[3] * x + p[6]
            }
        }
        return y.isFinite ? min(max(y, 0), 1) : 0
    }
}

/// The sRGB transfer function of IEC 61966-2-1.
enum SRGBCurve {
    /// The linear light of an encoded value from 0 to 1.
    static func linear(_ encoded: Double) -> Double {
        encoded <= 0.04045 ? encoded / 12.92 : pow((encoded + 0.055) / 1.055, 2.4)
    }

    /// The encoded value of linear light from 0 to 1.
    static func encoded(_ linear: Double) -> Double {
        linear <= 0.0031308 ? linear * 12.92 : 1.055 * pow(linear, 1 / 2.4) - 0.055
    }

    /// The 8-bit encoding of linear light `index / (count - 1)`, for `count` evenly spaced steps: fine
    /// enough that interpolating is never needed (the steepest step, at black, is under a third of a level).
    static let encodingTable: [UInt8] = {
        let count = 1 << 14
        return (0..<count).map { UInt8((encoded(Double($0) / Double(count - 1)) * 255).rounded()) }
    }()
}

/// A 3x3 matrix of doubles, row-major.
struct Matrix3: Sendable {
    let rows: [[Double]]

    /// The product `self * other`.
    func multiplied(by other: Matrix3) -> Matrix3 {
        Matrix3(
            rows: (0..<3).map { i in (0..<3).map { j in (0..<3).reduce(0) { $0 + rows[i][$1] * other.rows[$1][j] } } })
    }

    /// The inverse; `nil` when the matrix is singular.
    var inverted: Matrix3? {
        let m = rows
        let cofactors = (0..<3).map { i in
            (0..<3).map { j -> Double in
                let (r0, r1) = ((i + 1) % 3, (i + 2) % 3)
                let (c0, c1) = ((j + 1) % 3, (j + 2) % 3)
                return m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]
            }
        }
        let determinant = (0..<3).reduce(0) { $0 + m[0][$1] * cofactors[0][$1] }
        guard abs(determinant) > 1e-9, determinant.isFinite else { return nil }
        return Matrix3(rows: (0..<3).map { i in (0..<3).map { j in cofactors[j][i] / determinant } })
    }
}

/// Bounds-checked big-endian reads from an ICC profile; every read past the end gives `nil`.
struct ICCBytes {
    private let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var count: Int { bytes.count }

    /// The profile's colour space and connection space signatures and its tag table (each tag's
    /// element offset and size; a tag listed twice keeps the last), when the header is whole: the size
    /// it declares fits, `acsp` is in place, and it lists at most 1,024 tags.
    func header() -> (colorSpace: String, connectionSpace: String, tags: [String: (offset: Int, size: Int)])? {
        guard count >= 132, let declared = uint32(at: 0), Int(declared) <= count, let colorSpace = signature(at: 16),
            let connectionSpace = signature(at: 20), signature(at: 36) == "acsp", let tagCount = uint32(at: 128),
            tagCount <= 1024
        else { return nil }
        var tags: [String: (offset: Int, size: Int)] = [:]
        for index in 0..<Int(tagCount) {
            let entry = 132 + index * 12
            guard let name = signature(at: entry), let offset = uint32(at: entry + 4), let size = uint32(at: entry + 8)
            else { return nil }
            tags[name] = (Int(offset), Int(size))
        }
        return (colorSpace, connectionSpace, tags)
    }

    func contains(_ offset: Int, length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= bytes.count && length <= bytes.count - offset
    }

    func uint8(at offset: Int) -> Int? {
        contains(offset, length: 1) ? Int(bytes[offset]) : nil
    }

    func uint16(at offset: Int) -> UInt16? {
        guard contains(offset, length: 2) else { return nil }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    func uint32(at offset: Int) -> UInt32? {
        guard contains(offset, length: 4) else { return nil }
        return (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    /// A signed 15.16 fixed-point number.
    func s15Fixed16(at offset: Int) -> Double? {
        uint32(at: offset).map { Double(Int32(bitPattern: $0)) / 65536 }
    }

    /// Four ASCII characters (a tag or type signature).
    func signature(at offset: Int) -> String? {
        guard contains(offset, length: 4) else { return nil }
        return String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
    }

    /// The first XYZ number of an `XYZ ` element of `size` bytes at `offset`.
    func xyz(at offset: Int, size: Int) -> [Double]? {
        guard size >= 20, contains(offset, length: size), signature(at: offset) == "XYZ " else { return nil }
        let values = (0..<3).compactMap { s15Fixed16(at: offset + 8 + 4 * $0) }
        return values.count == 3 ? values : nil
    }
}
