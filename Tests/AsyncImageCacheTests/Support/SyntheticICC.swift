import Foundation

@testable import AsyncImageCache

/// RGB ICC profiles of the matrix-and-curves kind, written byte by byte, with colorants worked out
/// the way profile makers do it: primaries and white point to XYZ, then Bradford-adapted to D50; and
/// gray profiles of one tone curve.
enum SyntheticICC {
    enum Curve {
        /// `curv` with one entry: a pure power.
        case gamma(Double)
        /// `para` type 3 with sRGB's parameters (what Display P3 profiles carry).
        case sRGB
        /// `curv` with a table of 16-bit entries (none: the identity).
        case table([UInt16])
        /// `para` of `type` (0 to 4) with its parameters g, a, b, c, d, e, f as the type takes them.
        case parametric(type: Int, [Double])
    }

    /// Chromaticities (x, y) of the red, green and blue primaries and of the white point.
    struct Primaries {
        let red: (Double, Double)
        let green: (Double, Double)
        let blue: (Double, Double)
        let white: (Double, Double)

        static let sRGB = Primaries(red: (0.64, 0.33), green: (0.30, 0.60), blue: (0.15, 0.06), white: d65)
        static let displayP3 = Primaries(red: (0.68, 0.32), green: (0.265, 0.69), blue: (0.15, 0.06), white: d65)
        static let adobeRGB = Primaries(red: (0.64, 0.33), green: (0.21, 0.71), blue: (0.15, 0.06), white: d65)
        static let d65 = (0.3127, 0.3290)
    }

    /// The profile's bytes. `version4` writes a v4.3 header (the parser reads both).
    static func profile(_ primaries: Primaries, curve: Curve, version4: Bool = false) -> Data {
        // Colorants adapted to D50 with the Bradford transform, as ColorProfile makes them from chromaticities.
        let colorants = ColorProfile(
            red: primaries.red, green: primaries.green, blue: primaries.blue, white: primaries.white, curve: .sRGB)!
            .colorants
        var elements: [(tags: [String], bytes: [UInt8])] = []
        for (index, name) in ["rXYZ", "gXYZ", "bXYZ"].enumerated() {
            elements.append(([name], xyz(colorants[index])))
        }
        elements.append((["wtpt"], xyz([0.9642, 1.0, 0.8249])))
        elements.append((["rTRC", "gTRC", "bTRC"], curveElement(curve)))
        return assembled(colorSpace: "RGB ", elements, version4: version4)
    }

    /// A gray profile: a white point and one tone curve (`kTRC`), as Photoshop writes for grayscale
    /// files; `colorSpace` other than "GRAY" makes a damaged one.
    static func grayProfile(curve: Curve, colorSpace: String = "GRAY") -> Data {
        assembled(
            colorSpace: colorSpace, [(["wtpt"], xyz([0.9642, 1.0, 0.8249])), (["kTRC"], curveElement(curve))],
            version4: false)
    }

    /// A profile's bytes: the header for `colorSpace` and connection space `pcs` (four characters each),
    /// the tag table and `elements`, each under its tags and padded to four bytes.
    static func assembled(
        colorSpace: String, _ elements: [(tags: [String], bytes: [UInt8])], version4: Bool, pcs: String = "XYZ "
    ) -> Data {
        let tagCount = elements.reduce(0) { $0 + $1.tags.count }
        var offset = 128 + 4 + 12 * tagCount
        var table = ByteWriter()
        table.uint32(tagCount, bigEndian: true)
        var body: [UInt8] = []
        for element in elements {
            for tag in element.tags {
                table.ascii(tag)
                table.uint32(offset, bigEndian: true)
                table.uint32(element.bytes.count, bigEndian: true)
            }
            let padded = element.bytes + [UInt8](repeating: 0, count: (4 - element.bytes.count % 4) % 4)
            body += padded
            offset += padded.count
        }
        var header = ByteWriter()
        header.uint32(offset, bigEndian: true)
        header.uint32(0, bigEndian: true)  // preferred CMM
        header.uint32(version4 ? 0x0430_0000 : 0x0210_0000, bigEndian: true)
        header.ascii((colorSpace == "CMYK" ? "prtr" : "mntr") + colorSpace + pcs)
        header.append([UInt8](repeating: 0, count: 12))  // date
        header.ascii("acsp")
        header.append([UInt8](repeating: 0, count: 24))  // platform, flags, manufacturer, model, attributes
        header.uint32(0, bigEndian: true)  // rendering intent
        for value in [0.9642, 1.0, 0.8249] { header.uint32(fixed(value), bigEndian: true) }
        header.append([UInt8](repeating: 0, count: 128 - header.bytes.count))
        return Data(header.bytes + table.bytes + body)
    }

    /// The profile of `primaries` with a tone curve, ready to embed.
    static func displayP3() -> Data { profile(.displayP3, curve: .sRGB) }

    /// An `XYZ ` element of the D50 white.
    static func whitePoint() -> [UInt8] { xyz([0.9642, 1.0, 0.8249]) }

    static func fixed(_ value: Double) -> Int { Int(UInt32(bitPattern: Int32((value * 65536).rounded()))) }

    private static func xyz(_ value: [Double]) -> [UInt8] {
        ByteWriter.build { element in
            element.ascii("XYZ ")
            element.uint32(0, bigEndian: true)
            for component in value { element.uint32(fixed(component), bigEndian: true) }
        }
    }

    private static func curveElement(_ curve: Curve) -> [UInt8] {
        ByteWriter.build { element in
            switch curve {
            case .gamma(let gamma):
                element.ascii("curv")
                element.uint32(0, bigEndian: true)
                element.uint32(1, bigEndian: true)
                element.uint16(Int((gamma * 256).rounded()), bigEndian: true)
            case .table(let entries):
                element.ascii("curv")
                element.uint32(0, bigEndian: true)
                element.uint32(entries.count, bigEndian: true)
                for entry in entries { element.uint16(Int(entry), bigEndian: true) }
            case .sRGB, .parametric:
                let (type, parameters) =
                    if case .parametric(let type, let parameters) = curve {
                        (type, parameters)
                    } else {
                        (3, [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045])
                    }
                element.ascii("para")
                element.uint32(0, bigEndian: true)
                element.uint16(type, bigEndian: true)
                element.uint16(0, bigEndian: true)
                for parameter in parameters { element.uint32(fixed(parameter), bigEndian: true) }
            }
        }
    }

    /// `jpeg` with `profile` inserted after SOI as APP2 segments of at most `segmentSize` bytes of
    /// profile each, written in `order` (indices into the segments; all of them by default); with
    /// `emptyLast`, one more segment that holds none of it, numbered last.
    static func embedding(
        _ profile: Data, inJPEG jpeg: Data, segmentSize: Int = 65_519, order: [Int]? = nil, emptyLast: Bool = false
    ) -> Data {
        let bytes = [UInt8](profile)
        let pieces =
            stride(from: 0, to: bytes.count, by: segmentSize).map {
                Array(bytes[$0..<min(bytes.count, $0 + segmentSize)])
            } + (emptyLast ? [[]] : [])
        var segments: [UInt8] = []
        for index in order ?? Array(pieces.indices) {
            let payload = Array("ICC_PROFILE".utf8) + [0, UInt8(index + 1), UInt8(pieces.count)] + pieces[index]
            segments += [0xFF, 0xE2, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        }
        let original = [UInt8](jpeg)
        return Data(original[0..<2] + segments + original[2...])
    }

    /// `png` with an iCCP chunk holding `profile` right after IHDR.
    static func embedding(_ profile: Data, inPNG png: Data) -> Data {
        let bytes = [UInt8](png)
        let ihdrEnd = 8 + 8 + 13 + 4
        let content = Array("test profile".utf8) + [0, 0] + SyntheticPNG.storedZlib([UInt8](profile))
        return Data(bytes[0..<ihdrEnd] + SyntheticHeaders.pngChunk("iCCP", content) + bytes[ihdrEnd...])
    }
}

/// The profiles in `Fixtures/icc/`, the fuzzer's seeds for its `icc` target; a test checks that the
/// files are still what this writes.
enum ICCSeeds {
    static let all: [(String, Data)] = [
        ("display-p3-parametric.icc", SyntheticICC.profile(.displayP3, curve: .sRGB)),
        ("adobe-rgb-gamma.icc", SyntheticICC.profile(.adobeRGB, curve: .gamma(563.0 / 256))),
        (
            "display-p3-table-v4.icc",
            SyntheticICC.profile(
                .displayP3, curve: .table((0..<1024).map { UInt16((pow(Double($0) / 1023, 1.8) * 65535).rounded()) }),
                version4: true)
        ),
        ("gray-gamma-1.8.icc", SyntheticICC.grayProfile(curve: .gamma(1.8))),
        ("cmyk-lut16-lab.icc", SyntheticICC.cmykProfile(.lut16, gridPoints: 3, node: CMYKProfileTests.affine)),
        (
            "cmyk-atob-matrix-xyz.icc",
            SyntheticICC.cmykProfile(.lutAtoB(matrix: true), pcs: "XYZ ", gridPoints: 3, node: CMYKProfileTests.affine)
        ),
    ]
}
