import Foundation

/// CMYK ICC profiles written byte by byte: a white point and an `A2B0` of one of the three table
/// kinds, sampled from functions the tests know, so that what the parser and the interpolation give can
/// be checked against the functions themselves.
extension SyntheticICC {
    enum CMYKTable {
        /// `mft1`: 8-bit tables and curves of 256 entries (Lab only).
        case lut8
        /// `mft2`: 16-bit tables, curves of 256 entries.
        case lut16
        /// `mAB `: A curves, a 16-bit table and B curves; with `matrix`, M curves and a matrix between.
        case lutAtoB(matrix: Bool)
    }

    /// The matrix (rows, then offsets) a `lutAtoB(matrix: true)` profile carries, and its M curve.
    static let atobMatrix: (rows: [[Double]], offsets: [Double]) = (
        [[0.8, 0.1, 0.05], [0.05, 0.9, 0.0], [0.0, 0.1, 0.85]], [0.02, 0.01, 0.03]
    )
    static func atobMCurve(_ x: Double) -> Double { pow(x, 1.4) }

    /// A CMYK profile whose `A2B0` maps ink (0 to 1, cyan first) through `inputCurve` on each ink, the
    /// table sampled from `node` at `gridPoints` a side (outputs 0 to 1, as the connection space
    /// `pcs` encodes them for the table kind), and `outputCurve` on each output.
    static func cmykProfile(
        _ kind: CMYKTable, pcs: String = "Lab ", gridPoints: Int,
        inputCurve: (Double) -> Double = { $0 }, outputCurve: (Double) -> Double = { $0 },
        node: ([Double]) -> [Double]
    ) -> Data {
        var nodes: [[Double]] = []
        for c in 0..<gridPoints {
            for m in 0..<gridPoints {
                for y in 0..<gridPoints {
                    for k in 0..<gridPoints {
                        nodes.append(node([c, m, y, k].map { Double($0) / Double(gridPoints - 1) }))
                    }
                }
            }
        }
        func sampled(_ curve: (Double) -> Double, count: Int) -> [Double] {
            (0..<count).map { curve(Double($0) / Double(count - 1)) }
        }
        let element = ByteWriter.build { lut in
            switch kind {
            case .lut8, .lut16:
                let wide = if case .lut16 = kind { true } else { false }
                lut.ascii(wide ? "mft2" : "mft1")
                lut.uint32(0, bigEndian: true)
                lut.append([4, 3, UInt8(gridPoints), 0])
                for row in 0..<3 {
                    for column in 0..<3 { lut.uint32(fixed(row == column ? 1 : 0), bigEndian: true) }
                }
                func entry(_ value: Double) {
                    let clamped = min(max(value, 0), 1)
                    if wide {
                        lut.uint16(Int((clamped * 65535).rounded()), bigEndian: true)
                    } else {
                        lut.append([UInt8((clamped * 255).rounded())])
                    }
                }
                if wide {
                    lut.uint16(256, bigEndian: true)
                    lut.uint16(256, bigEndian: true)
                }
                for _ in 0..<4 { sampled(inputCurve, count: 256).forEach(entry) }
                nodes.joined().forEach(entry)
                for _ in 0..<3 { sampled(outputCurve, count: 256).forEach(entry) }
            case .lutAtoB(let hasMatrix):
                let curveTable = { (curve: (Double) -> Double) -> [UInt8] in
                    ByteWriter.build { element in
                        element.ascii("curv")
                        element.uint32(0, bigEndian: true)
                        element.uint32(256, bigEndian: true)
                        for value in sampled(curve, count: 256) {
                            element.uint16(Int((min(max(value, 0), 1) * 65535).rounded()), bigEndian: true)
                        }
                    }
                }
                let aCurves = Array(repeating: curveTable(inputCurve), count: 4).joined()
                let table = ByteWriter.build { clut in
                    clut.append([UInt8](repeating: UInt8(gridPoints), count: 4) + [UInt8](repeating: 0, count: 12))
                    clut.append([2, 0, 0, 0])
                    for value in nodes.joined() {
                        clut.uint16(Int((min(max(value, 0), 1) * 65535).rounded()), bigEndian: true)
                    }
                    clut.append([UInt8](repeating: 0, count: (4 - clut.bytes.count % 4) % 4))  // the next element aligned
                }
                // The output curve is the B curve; with a matrix, the M curve is ``atobMCurve``.
                let bCurves = Array(repeating: curveTable(outputCurve), count: 3).joined()
                let mCurves = Array(repeating: curveTable(atobMCurve), count: 3).joined()
                let matrix = ByteWriter.build { values in
                    for value in atobMatrix.rows.joined() + atobMatrix.offsets {
                        values.uint32(fixed(value), bigEndian: true)
                    }
                }
                // Header (32 bytes), then B curves, matrix, M curves, table, A curves.
                var offset = 32
                func place(_ bytes: [UInt8]) -> Int {
                    defer { offset += bytes.count }
                    return offset
                }
                let bOffset = place(Array(bCurves))
                let matrixOffset = hasMatrix ? place(matrix) : 0
                let mOffset = hasMatrix ? place(Array(mCurves)) : 0
                let tableOffset = place(table)
                let aOffset = place(Array(aCurves))
                lut.ascii("mAB ")
                lut.uint32(0, bigEndian: true)
                lut.append([4, 3, 0, 0])
                for value in [bOffset, matrixOffset, mOffset, tableOffset, aOffset] {
                    lut.uint32(value, bigEndian: true)
                }
                lut.append(Array(bCurves))
                if hasMatrix {
                    lut.append(matrix)
                    lut.append(Array(mCurves))
                }
                lut.append(table)
                lut.append(Array(aCurves))
            }
        }
        return assembled(
            colorSpace: "CMYK", [(["wtpt"], whitePoint()), (["A2B0"], element)], version4: false, pcs: pcs)
    }
}
