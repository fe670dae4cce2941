import Foundation

/// The perceptual transform (`A2B0`) of a CMYK ICC profile, as print workflows embed in CMYK JPEGs (a
/// press profile such as SWOP or FOGRA), reduced to converting ink to sRGB: input curves, a
/// four-dimensional lookup table, output curves (and, in a v4 `lutAtoBType`, a matrix) into the profile
/// connection space, Lab or XYZ, then to sRGB.
///
/// Without it a CMYK JPEG can only be converted by multiplying each colour by its black, which is how
/// no press prints: colours come out too bright and too saturated. ImageIO converts through the profile
/// on Apple platforms; the Linux JPEG decoder hands each row of ink to ``convert(_:width:)``.
///
/// The table is interpolated as Little CMS does it: linearly along cyan, tetrahedrally in magenta,
/// yellow and black. The tag types read are `lut8Type` (`mft1`, Lab only), `lut16Type` (`mft2`) and
/// `lutAtoBType` (`mAB `); anything else, or any damage, gives `nil`.
final class CMYKProfile: Sendable {
    /// Per ink (cyan, magenta, yellow, black; 256 entries each), the position in the table of each
    /// 8-bit ink level after the input curve: from 0 to the ink's grid points minus one.
    private let inputPositions: [Float]
    /// Grid points along each ink.
    private let gridPoints: [Int]
    /// Table entries apart from one grid point to the next, along each ink.
    private let strides: [Int]
    /// The table, from 0 to 1: three outputs a node, the first ink varying slowest.
    private let table: [Float]
    /// Per output, what follows the table before the connection space: evenly spaced samples from 0
    /// to 1, a lut's own tables or a lutAtoB's curves sampled finely.
    private let outputCurves: [[Float]]
    /// A v4 transform's matrix (rows, then offsets), after the output curves; then its last curves.
    private let matrix: (rows: [[Float]], offsets: [Float])?
    private let lastCurves: [[Float]]?
    /// How the outputs, from 0 to 1, encode the connection space.
    private let encoding: Encoding
    /// XYZ (D50) to linear sRGB.
    private let toLinearSRGB: [Float]

    private enum Encoding {
        /// Lab with 100 at 1 (lut8, lutAtoB).
        case lab
        /// Lab in lut16's legacy encoding: L* 100 at 0xFF00.
        case legacyLab
        /// XYZ as u1Fixed15: 1.0 at 0x8000.
        case xyz
    }

    /// Samples of a lutAtoB's curve from 0 to 1, interpolated linearly between: fine enough that the
    /// error is far below a level.
    private static let curveSamples = 1024

    /// The largest table read: 33 grid points a side is the most that press profiles use.
    private static let largestTable = 1 << 22

    /// The largest CMYK profile read, 16 MiB (what 255 APP2 segments hold): press profiles carry several
    /// tables (A2B0-2, B2A0-2) and pass ColorProfile's 1 MiB; a 33-point lut16 A2B0 alone is 7 MB.
    static let largestProfile = 1 << 24

    /// Parses `iccData`; `nil` unless it is a well-formed CMYK profile with an `A2B0` of a kind read here.
    init?(iccData: Data) {
        guard iccData.count <= Self.largestProfile else { return nil }
        let bytes = ICCBytes([UInt8](iccData))
        guard let (colorSpace, space, tags) = bytes.header(), colorSpace == "CMYK", space == "Lab " || space == "XYZ ",
            let element = tags["A2B0"], element.size >= 32, bytes.contains(element.offset, length: element.size)
        else { return nil }
        let isLab = space == "Lab "
        let parsed: Parsed?
        switch bytes.signature(at: element.offset) {
        case "mft2": parsed = Self.parseLut(bytes, element, entryBytes: 2, encoding: isLab ? .legacyLab : .xyz)
        case "mft1": parsed = isLab ? Self.parseLut(bytes, element, entryBytes: 1, encoding: .lab) : nil
        case "mAB ": parsed = Self.parseAtoB(bytes, element, encoding: isLab ? .lab : .xyz)
        default: parsed = nil
        }
        guard let parsed else { return nil }
        inputPositions = parsed.inputPositions.flatMap { $0 }
        gridPoints = parsed.gridPoints
        strides = (0..<4).map { ink in 3 * parsed.gridPoints[(ink + 1)...].reduce(1, *) }
        table = parsed.table
        outputCurves = parsed.outputCurves
        matrix = parsed.matrix
        lastCurves = parsed.lastCurves
        encoding = parsed.encoding
        let inverse = ColorProfile.matrix(ColorProfile.sRGBColorants).inverted!
        toLinearSRGB = inverse.rows.flatMap { $0.map(Float.init) }
    }

    private struct Parsed {
        var inputPositions: [[Float]]
        var gridPoints: [Int]
        var table: [Float]
        var outputCurves: [[Float]]
        var matrix: (rows: [[Float]], offsets: [Float])?
        var lastCurves: [[Float]]?
        var encoding: Encoding
    }

    /// `lut8Type` or `lut16Type` (`entryBytes` 1 or 2): four inputs, three outputs, one grid size, curves
    /// as tables (256 entries each in lut8). The matrix only applies to XYZ input, so not here.
    private static func parseLut(
        _ bytes: ICCBytes, _ element: (offset: Int, size: Int), entryBytes: Int, encoding: Encoding
    ) -> Parsed? {
        let start = element.offset
        guard let inputs = bytes.uint8(at: start + 8), let outputs = bytes.uint8(at: start + 9),
            let grid = bytes.uint8(at: start + 10), inputs == 4, outputs == 3, grid >= 2
        else { return nil }
        let (inputEntries, outputEntries, tablesStart): (Int, Int, Int)
        if entryBytes == 2 {
            guard let n = bytes.uint16(at: start + 48), let m = bytes.uint16(at: start + 50) else { return nil }
            (inputEntries, outputEntries, tablesStart) = (Int(n), Int(m), start + 52)
        } else {
            (inputEntries, outputEntries, tablesStart) = (256, 256, start + 48)
        }
        let gridPoints = Array(repeating: Int(grid), count: 4)
        let nodes = gridPoints.reduce(1, *)
        guard (2...4096).contains(inputEntries), (2...4096).contains(outputEntries), nodes * 3 <= largestTable else {
            return nil
        }
        let tableStart = tablesStart + 4 * inputEntries * entryBytes
        let outputStart = tableStart + nodes * 3 * entryBytes
        guard outputStart + 3 * outputEntries * entryBytes <= start + element.size,
            bytes.contains(tablesStart, length: outputStart + 3 * outputEntries * entryBytes - tablesStart)
        else { return nil }
        func entries(at offset: Int, count: Int) -> [Float] {
            values(bytes, at: offset, count: count, bytesEach: entryBytes)
        }
        let inputCurves = (0..<4).map { entries(at: tablesStart + $0 * inputEntries * entryBytes, count: inputEntries) }
        let outputCurves = (0..<3).map {
            entries(at: outputStart + $0 * outputEntries * entryBytes, count: outputEntries)
        }
        return Parsed(
            inputPositions: zip(inputCurves, gridPoints).map { positions(through: $0.0, gridPoints: $0.1) },
            gridPoints: gridPoints, table: entries(at: tableStart, count: nodes * 3), outputCurves: outputCurves,
            matrix: nil, lastCurves: nil, encoding: encoding)
    }

    /// `lutAtoBType`: A curves, the table, then M curves and the matrix if present, then B curves.
    private static func parseAtoB(_ bytes: ICCBytes, _ element: (offset: Int, size: Int), encoding: Encoding)
        -> Parsed?
    {
        let start = element.offset
        let end = start + element.size
        guard bytes.uint8(at: start + 8) == 4, bytes.uint8(at: start + 9) == 3,
            let bOffset = bytes.uint32(at: start + 12).map(Int.init),
            let matrixOffset = bytes.uint32(at: start + 16).map(Int.init),
            let mOffset = bytes.uint32(at: start + 20).map(Int.init),
            let tableOffset = bytes.uint32(at: start + 24).map(Int.init),
            let aOffset = bytes.uint32(at: start + 28).map(Int.init),
            bOffset > 0, tableOffset > 0, aOffset > 0, (matrixOffset == 0) == (mOffset == 0)
        else { return nil }
        guard let aCurves = curves(bytes, at: start + aOffset, count: 4, end: end, samples: 256),
            let bCurves = curves(bytes, at: start + bOffset, count: 3, end: end)
        else { return nil }
        // The table: grid points per input (16 bytes, the first four used), precision, padding, data.
        let tableStart = start + tableOffset
        let gridPoints = (0..<4).map { bytes.uint8(at: tableStart + $0) ?? 0 }
        guard gridPoints.allSatisfy({ $0 >= 2 }), let precision = bytes.uint8(at: tableStart + 16),
            precision == 1 || precision == 2
        else { return nil }
        let nodes = gridPoints.reduce(1, *)
        guard nodes * 3 <= largestTable, tableStart + 20 + nodes * 3 * precision <= end,
            bytes.contains(tableStart + 20, length: nodes * 3 * precision)
        else { return nil }
        let table = values(bytes, at: tableStart + 20, count: nodes * 3, bytesEach: precision)
        var matrix: (rows: [[Float]], offsets: [Float])?
        var outputCurves = bCurves
        var lastCurves: [[Float]]?
        if matrixOffset != 0 {
            guard let mCurves = curves(bytes, at: start + mOffset, count: 3, end: end),
                start + matrixOffset + 48 <= end
            else { return nil }
            let values = (0..<12).compactMap { bytes.s15Fixed16(at: start + matrixOffset + 4 * $0).map(Float.init) }
            guard values.count == 12, values.allSatisfy(\.isFinite) else { return nil }
            matrix = ((0..<3).map { Array(values[(3 * $0)..<(3 * $0 + 3)]) }, Array(values[9..<12]))
            (outputCurves, lastCurves) = (mCurves, bCurves)
        }
        return Parsed(
            inputPositions: zip(aCurves, gridPoints).map { positions(through: $0.0, gridPoints: $0.1) },
            gridPoints: gridPoints, table: table, outputCurves: outputCurves, matrix: matrix, lastCurves: lastCurves,
            encoding: encoding)
    }

    /// `count` unsigned big-endian numbers of `bytesEach` bytes (1 or 2) from `offset`, from 0 to 1; the
    /// caller has checked that they lie inside the profile.
    private static func values(_ bytes: ICCBytes, at offset: Int, count: Int, bytesEach: Int) -> [Float] {
        let scale = Float(bytesEach == 2 ? 65535 : 255)
        return (0..<count).map { index in
            let raw =
                bytesEach == 2 ? bytes.uint16(at: offset + 2 * index).map(Int.init) : bytes.uint8(at: offset + index)
            return Float(raw ?? 0) / scale
        }
    }

    /// `count` curves (`curv` or `para`) one after another from `offset`, each padded to four bytes,
    /// sampled at `samples` points (256 for input curves: exactly at each 8-bit level, so that a curve
    /// with a jump is not blurred).
    private static func curves(
        _ bytes: ICCBytes, at offset: Int, count: Int, end: Int, samples: Int = curveSamples
    ) -> [[Float]]? {
        var result: [[Float]] = []
        var position = offset
        for _ in 0..<count {
            guard position < end, let size = curveSize(bytes, at: position), position + size <= end,
                let curve = ToneCurve(bytes, at: position, size: size)
            else { return nil }
            result.append((0..<samples).map { Float(curve.linear(Double($0) / Double(samples - 1))) })
            position += (size + 3) / 4 * 4
        }
        return result
    }

    /// The size of the `curv` or `para` element at `offset`, from its own counts.
    private static func curveSize(_ bytes: ICCBytes, at offset: Int) -> Int? {
        switch bytes.signature(at: offset) {
        case "curv": return bytes.uint32(at: offset + 8).flatMap { $0 <= 65_536 ? 12 + 2 * Int($0) : nil }
        case "para":
            let counts = [1, 3, 4, 5, 7]
            return bytes.uint16(at: offset + 8).flatMap { Int($0) < counts.count ? 12 + 4 * counts[Int($0)] : nil }
        default: return nil
        }
    }

    /// Where each 8-bit level falls in a table of `gridPoints` after `curve` (sampled evenly from 0 to 1).
    private static func positions(through curve: [Float], gridPoints: Int) -> [Float] {
        (0...255).map { level in min(max(lookUp(curve, Float(level) / 255), 0), 1) * Float(gridPoints - 1) }
    }

    /// `curve` (evenly spaced samples from 0 to 1) at `x`, interpolated linearly; `x` clamped to 0...1.
    @inline(__always)
    fileprivate static func lookUp<Curve: RandomAccessCollection<Float>>(_ curve: Curve, _ x: Float) -> Float
    where Curve.Index == Int {
        let position = min(max(x, 0), 1) * Float(curve.count - 1)
        let index = min(Int(position), curve.count - 2)
        let fraction = position - Float(index)
        return curve[index] + (curve[index + 1] - curve[index]) * fraction
    }

    /// The profile connection space values (0 to 1, as encoded) of one pixel of ink.
    func connectionSpace(cyan: UInt8, magenta: UInt8, yellow: UInt8, black: UInt8) -> SIMD3<Float> {
        withTables { tables in tables.connectionSpace(cyan, magenta, yellow, black) }
    }

    /// The tables as pointers, for the per-pixel work.
    private struct Tables {
        let positions: UnsafeBufferPointer<Float>
        let table: UnsafeBufferPointer<Float>
        let outputCurves: [UnsafeBufferPointer<Float>]
        let lastCurves: [UnsafeBufferPointer<Float>]?
        let gridPoints: (Int, Int, Int, Int)
        let strides: (Int, Int, Int, Int)
        let matrix: (rows: [[Float]], offsets: [Float])?

        @inline(__always)
        func connectionSpace(_ cyan: UInt8, _ magenta: UInt8, _ yellow: UInt8, _ black: UInt8) -> SIMD3<Float> {
            let position = (
                positions[Int(cyan)], positions[256 + Int(magenta)], positions[512 + Int(yellow)],
                positions[768 + Int(black)]
            )
            // Linear along cyan between two tetrahedral interpolations in magenta, yellow and black.
            let c0 = min(Int(position.0), gridPoints.0 - 1)
            let c1 = min(c0 + 1, gridPoints.0 - 1)
            let low = tetrahedral(base: c0 * strides.0, position)
            let high = tetrahedral(base: c1 * strides.0, position)
            var values = low + (high - low) * (position.0 - Float(c0))
            for channel in 0..<3 { values[channel] = CMYKProfile.lookUp(outputCurves[channel], values[channel]) }
            if let matrix, let lastCurves {
                let input = values
                for row in 0..<3 {
                    let m = matrix.rows[row]
                    let sum = matrix.offsets[row] + m[0] * input[0] + m[1] * input[1] + m[2] * input[2]
                    values[row] = CMYKProfile.lookUp(lastCurves[row], sum)
                }
            }
            return values
        }

        @inline(__always)
        private func tetrahedral(base: Int, _ position: (Float, Float, Float, Float)) -> SIMD3<Float> {
            @inline(__always) func corner(_ value: Float, _ points: Int, _ stride: Int) -> (Int, Int, Float) {
                let lower = min(Int(value), points - 1)
                return (lower * stride, min(lower + 1, points - 1) * stride, value - Float(lower))
            }
            let (x0, x1, rx) = corner(position.1, gridPoints.1, strides.1)
            let (y0, y1, ry) = corner(position.2, gridPoints.2, strides.2)
            let (z0, z1, rz) = corner(position.3, gridPoints.3, strides.3)
            @inline(__always) func node(_ x: Int, _ y: Int, _ z: Int) -> SIMD3<Float> {
                let index = base + x + y + z
                return SIMD3(table[index], table[index + 1], table[index + 2])
            }
            let c0 = node(x0, y0, z0)
            let (c1, c2, c3): (SIMD3<Float>, SIMD3<Float>, SIMD3<Float>)
            if rx >= ry && ry >= rz {
                c1 = node(x1, y0, z0) - c0
                c2 = node(x1, y1, z0) - node(x1, y0, z0)
                c3 = node(x1, y1, z1) - node(x1, y1, z0)
            } else if rx >= rz && rz >= ry {
                c1 = node(x1, y0, z0) - c0
                c2 = node(x1, y1, z1) - node(x1, y0, z1)
                c3 = node(x1, y0, z1) - node(x1, y0, z0)
            } else if rz >= rx && rx >= ry {
                c1 = node(x1, y0, z1) - node(x0, y0, z1)
                c2 = node(x1, y1, z1) - node(x1, y0, z1)
                c3 = node(x0, y0, z1) - c0
            } else if ry >= rx && rx >= rz {
                c1 = node(x1, y1, z0) - node(x0, y1, z0)
                c2 = node(x0, y1, z0) - c0
                c3 = node(x1, y1, z1) - node(x1, y1, z0)
            } else if ry >= rz && rz >= rx {
                c1 = node(x1, y1, z1) - node(x0, y1, z1)
                c2 = node(x0, y1, z0) - c0
                c3 = node(x0, y1, z1) - node(x0, y1, z0)
            } else {
                c1 = node(x1, y1, z1) - node(x0, y1, z1)
                c2 = node(x0, y1, z1) - node(x0, y0, z1)
                c3 = node(x0, y0, z1) - c0
            }
            return c0 + c1 * rx + c2 * ry + c3 * rz
        }
    }

    private func withTables<T>(_ body: (Tables) -> T) -> T {
        inputPositions.withUnsafeBufferPointer { positions in
            table.withUnsafeBufferPointer { table in
                withCurves(outputCurves) { outputs in
                    withCurves(lastCurves ?? []) { last in
                        body(
                            Tables(
                                positions: positions, table: table, outputCurves: outputs,
                                lastCurves: lastCurves == nil ? nil : last,
                                gridPoints: (gridPoints[0], gridPoints[1], gridPoints[2], gridPoints[3]),
                                strides: (strides[0], strides[1], strides[2], strides[3]), matrix: matrix))
                    }
                }
            }
        }
    }

    /// `curves` as buffer pointers, valid inside `body`.
    private func withCurves<T>(_ curves: [[Float]], _ body: ([UnsafeBufferPointer<Float>]) -> T) -> T {
        func nest(_ index: Int, _ done: [UnsafeBufferPointer<Float>]) -> T {
            guard index < curves.count else { return body(done) }
            return curves[index].withUnsafeBufferPointer { nest(index + 1, done + [$0]) }
        }
        return nest(0, [])
    }

    /// Linear sRGB (unclamped) of connection space values, as ``connectionSpace(cyan:magenta:yellow:black:)`` gives them.
    func linearSRGB(_ pcs: SIMD3<Float>) -> SIMD3<Float> {
        let (x, y, z): (Float, Float, Float)
        switch encoding {
        case .xyz:
            let scale: Float = 65535 / 32768
            (x, y, z) = (pcs[0] * scale, pcs[1] * scale, pcs[2] * scale)
        case .lab, .legacyLab:
            let scale: Float = encoding == .legacyLab ? 65535 / 65280 : 1
            let l = pcs[0] * scale * 100
            let a = pcs[1] * scale * 255 - 128
            let b = pcs[2] * scale * 255 - 128
            func inverse(_ t: Float) -> Float { t > 6 / 29 ? t * t * t : 3 * (6 / 29) * (6 / 29) * (t - 4 / 29) }
            let fy = (l + 16) / 116
            (x, y, z) = (0.9642 * inverse(fy + a / 500), inverse(fy), 0.8249 * inverse(fy - b / 200))
        }
        let m = toLinearSRGB
        return SIMD3(m[0] * x + m[1] * y + m[2] * z, m[3] * x + m[4] * y + m[5] * z, m[6] * x + m[7] * y + m[8] * z)
    }

    /// Converts `width` pixels of ink (cyan, magenta, yellow, black; 0 none, 255 full) in `row` to
    /// 8-bit sRGB with opaque alpha, in place. A run of one ink is converted once.
    func convert(_ row: UnsafeMutablePointer<UInt8>, width: Int) {
        let scale = Float(SRGBCurve.encodingTable.count - 1)
        withTables { tables in
            SRGBCurve.encodingTable.withUnsafeBufferPointer { encoding in
                @inline(__always) func encode(_ linear: Float) -> UInt8 {
                    encoding[Int(min(max(linear, 0), 1) * scale + 0.5)]
                }
                var previous: (ink: UInt32, rgb: (UInt8, UInt8, UInt8))?
                for x in 0..<width {
                    let pixel = row + 4 * x
                    let ink =
                        UInt32(pixel[0]) << 24 | UInt32(pixel[1]) << 16 | UInt32(pixel[2]) << 8 | UInt32(pixel[3])
                    let rgb: (UInt8, UInt8, UInt8)
                    if let previous, previous.ink == ink {
                        rgb = previous.rgb
                    } else {
                        let linear = linearSRGB(tables.connectionSpace(pixel[0], pixel[1], pixel[2], pixel[3]))
                        rgb = (encode(linear[0]), encode(linear[1]), encode(linear[2]))
                        previous = (ink, rgb)
                    }
                    (pixel[0], pixel[1], pixel[2], pixel[3]) = (rgb.0, rgb.1, rgb.2, 255)
                }
            }
        }
    }
}
