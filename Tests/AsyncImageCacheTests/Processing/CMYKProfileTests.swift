import Foundation
import Testing

@testable import AsyncImageCache

/// CMYK ICC profiles: their `A2B0` tables read and interpolated (checked against the functions the
/// synthetic profiles are sampled from), the connection space turned into sRGB (checked against the
/// published D50 matrix), and CMYK JPEGs converted through them by the decoder and the store.
@Suite("CMYK profiles", .ownThreads)
struct CMYKProfileTests {
    /// XYZ (D50) to linear sRGB, Bradford-adapted, as Bruce Lindbloom publishes it.
    static let xyzToSRGB = [
        [3.1338561, -1.6168667, -0.4906146], [-0.9787684, 1.9161415, 0.0334540], [0.0719453, -0.2289914, 1.4052427],
    ]

    /// The 8-bit sRGB of an XYZ (D50) colour.
    static func srgb(x: Double, y: Double, z: Double) -> [Int] {
        xyzToSRGB.map { row in ColorProfileTests.srgbEncode(row[0] * x + row[1] * y + row[2] * z) }
    }

    /// The 8-bit sRGB of a Lab (D50) colour.
    static func srgb(l: Double, a: Double, b: Double) -> [Int] {
        func inverse(_ t: Double) -> Double { t > 6.0 / 29 ? t * t * t : 3 * pow(6.0 / 29, 2) * (t - 4.0 / 29) }
        let fy = (l + 16) / 116
        return srgb(x: 0.9642 * inverse(fy + a / 500), y: inverse(fy), z: 0.8249 * inverse(fy - b / 200))
    }

    /// An affine map of ink (0 to 1) to three outputs that stay within 0...1.
    static func affine(_ ink: [Double]) -> [Double] {
        [
            0.9 - 0.3 * ink[0] - 0.2 * ink[1] - 0.1 * ink[2] - 0.25 * ink[3],
            0.5 - 0.2 * ink[0] + 0.3 * ink[1] - 0.05 * ink[2] + 0.02 * ink[3],
            0.5 + 0.1 * ink[0] + 0.05 * ink[1] - 0.3 * ink[2] + 0.01 * ink[3],
        ]
    }

    /// Values that follow no pattern, the same every run.
    static func scattered(_ ink: [Double]) -> [Double] {
        (0..<3).map { output in
            let seed = ink.enumerated().reduce(Double(output) * 7.13) {
                $0 + $1.element * [12.9898, 78.233, 37.719, 4.581][$1.offset]
            }
            let value = sin(seed) * 43758.5453
            return value - value.rounded(.down)
        }
    }

    static let tableKinds: [SyntheticICC.CMYKTable] = [.lut8, .lut16, .lutAtoB(matrix: false)]

    @Test func aTableGivesItsOwnValuesAtItsNodes() throws {
        // Six grid points: nodes at the ink levels 0, 51, 102, 153, 204 and 255.
        let data = SyntheticICC.cmykProfile(.lut16, gridPoints: 6, node: Self.scattered)
        let profile = try #require(CMYKProfile(iccData: data))
        for c in 0..<6 {
            for m in 0..<6 {
                for y in [0, 2, 5] {
                    for k in [0, 3, 5] {
                        let ink = [c, m, y, k].map { UInt8($0 * 51) }
                        let value = profile.connectionSpace(
                            cyan: ink[0], magenta: ink[1], yellow: ink[2], black: ink[3])
                        let expected = Self.scattered([c, m, y, k].map { Double($0) / 5 })
                        for channel in 0..<3 { #expect(abs(Double(value[channel]) - expected[channel]) < 2e-5) }
                    }
                }
            }
        }
    }

    @Test(arguments: 0..<3)
    func betweenNodesATableOfAnAffineMapGivesTheMap(kind: Int) throws {
        // Linear along cyan and tetrahedral in the rest reproduce an affine map exactly; what is left is
        // the tables' quantization (8 bits for lut8).
        let table = Self.tableKinds[kind]
        let profile = try #require(
            CMYKProfile(iccData: SyntheticICC.cmykProfile(table, gridPoints: 5, node: Self.affine)))
        let tolerance = kind == 0 ? 3.0 / 255 : 1e-4
        var generator = SeededGenerator(seed: 5)
        for _ in 0..<500 {
            let ink = (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let value = profile.connectionSpace(cyan: ink[0], magenta: ink[1], yellow: ink[2], black: ink[3])
            let expected = Self.affine(ink.map { Double($0) / 255 })
            for channel in 0..<3 { #expect(abs(Double(value[channel]) - expected[channel]) < tolerance, "\(ink)") }
        }
    }

    @Test func curvesComeBeforeAndAfterTheTable() throws {
        let data = SyntheticICC.cmykProfile(
            .lut16, gridPoints: 9, inputCurve: { $0 * $0 }, outputCurve: { pow($0, 0.8) }, node: Self.affine)
        let profile = try #require(CMYKProfile(iccData: data))
        for level in stride(from: 0, through: 255, by: 15) {
            let ink = [UInt8(level), UInt8(255 - level), UInt8(level / 2), UInt8(level / 3)]
            let value = profile.connectionSpace(cyan: ink[0], magenta: ink[1], yellow: ink[2], black: ink[3])
            let expected = Self.affine(ink.map { pow(Double($0) / 255, 2) }).map { pow($0, 0.8) }
            for channel in 0..<3 { #expect(abs(Double(value[channel]) - expected[channel]) < 3e-3, "\(ink)") }
        }
    }

    @Test func aLutAtoBsInputCurvesAreExactAtEveryLevelEvenWithAJump() throws {
        // ICC's parametric type 3 with c * d != d^g jumps at d (0.5 here): from 0.05 to 0.25.
        let jump = { (x: Double) -> Double in x >= 0.5 ? pow(x, 2) : 0.1 * x }
        let data = SyntheticICC.cmykProfile(.lutAtoB(matrix: false), gridPoints: 5, inputCurve: jump, node: Self.affine)
        let profile = try #require(CMYKProfile(iccData: data))
        for level in 120...136 {
            let ink = [UInt8(level), 0, 0, 0]
            let value = profile.connectionSpace(cyan: ink[0], magenta: ink[1], yellow: ink[2], black: ink[3])
            // The A curve is written as a 256-entry table, exact at each level.
            let expected = Self.affine([jump(Double(level) / 255), jump(0), jump(0), jump(0)])
            for channel in 0..<3 { #expect(abs(Double(value[channel]) - expected[channel]) < 1e-4, "level \(level)") }
        }
    }

    @Test func aLutAtoBsMatrixAppliesBetweenItsMAndBCurves() throws {
        let data = SyntheticICC.cmykProfile(.lutAtoB(matrix: true), gridPoints: 5, node: Self.affine)
        let profile = try #require(CMYKProfile(iccData: data))
        let (rows, offsets) = SyntheticICC.atobMatrix
        for level in stride(from: 0, through: 255, by: 17) {
            let ink = [UInt8(level), UInt8(level / 2), UInt8(255 - level), UInt8(level / 4)]
            let value = profile.connectionSpace(cyan: ink[0], magenta: ink[1], yellow: ink[2], black: ink[3])
            let curved = Self.affine(ink.map { Double($0) / 255 }).map(SyntheticICC.atobMCurve)
            let expected = (0..<3).map { row in
                min(max((0..<3).reduce(offsets[row]) { $0 + rows[row][$1] * curved[$1] }, 0), 1)
            }
            for channel in 0..<3 { #expect(abs(Double(value[channel]) - expected[channel]) < 1e-3, "\(ink)") }
        }
    }

    /// A profile of one colour whatever the ink, in `kind`'s encoding of the connection space.
    static func oneColour(_ kind: SyntheticICC.CMYKTable, pcs: String, _ encoded: [Double]) throws -> CMYKProfile {
        try #require(CMYKProfile(iccData: SyntheticICC.cmykProfile(kind, pcs: pcs, gridPoints: 2) { _ in encoded }))
    }

    /// The 8-bit sRGB that `profile` gives for one pixel of ink.
    static func converted(_ profile: CMYKProfile, _ ink: [UInt8] = [10, 20, 30, 40]) -> [Int] {
        var pixel = ink
        pixel.withUnsafeMutableBufferPointer { profile.convert($0.baseAddress!, width: 1) }
        #expect(pixel[3] == 255)
        return pixel.prefix(3).map(Int.init)
    }

    @Test(arguments: [(50.0, 0.0, 0.0), (50, 60, 40), (80, -40, 60), (30, 20, -50), (95, -2, 3), (10, 5, 5)])
    func labBecomesTheSRGBItsDefinitionGivesInEveryEncoding(l: Double, a: Double, b: Double) throws {
        let expected = Self.srgb(l: l, a: a, b: b)
        let plain = [l / 100, (a + 128) / 255, (b + 128) / 255]
        // lut16 keeps ICC v2's legacy Lab encoding, with L* 100 at 0xFF00.
        let legacy = plain.map { $0 * 65280 / 65535 }
        for (kind, encoded) in [
            (SyntheticICC.CMYKTable.lut16, legacy), (.lut8, plain), (.lutAtoB(matrix: false), plain),
        ] {
            let result = Self.converted(try Self.oneColour(kind, pcs: "Lab ", encoded))
            // lut8 holds each value in 8 bits: within a level or two of the exact colour.
            let tolerance = if case .lut8 = kind { 3 } else { 1 }
            #expect(zip(result, expected).allSatisfy { abs($0 - $1) <= tolerance }, "\(kind): \(result) vs \(expected)")
        }
    }

    @Test(arguments: [(0.9642, 1.0, 0.8249), (0.2, 0.18, 0.15), (0.4, 0.3, 0.05), (0.1, 0.2, 0.5)])
    func xyzBecomesTheSRGBItsDefinitionGives(x: Double, y: Double, z: Double) throws {
        // XYZ as u1Fixed15: 1.0 at 0x8000.
        let encoded = [x, y, z].map { $0 * 32768 / 65535 }
        let result = Self.converted(try Self.oneColour(.lut16, pcs: "XYZ ", encoded))
        let expected = Self.srgb(x: x, y: y, z: z)
        #expect(zip(result, expected).allSatisfy { abs($0 - $1) <= 1 }, "\(result) vs \(expected)")
    }

    @Test func profilesOfOtherKindsAndDamagedOnesAreRefused() throws {
        let valid = [UInt8](SyntheticICC.cmykProfile(.lut16, gridPoints: 3, node: Self.affine))
        #expect(CMYKProfile(iccData: Data(valid)) != nil)
        // Neither reader takes the other's profiles.
        #expect(ColorProfile(iccData: Data(valid)) == nil)
        #expect(CMYKProfile(iccData: SyntheticICC.displayP3()) == nil)
        #expect(
            CMYKProfile(iccData: SyntheticICC.cmykProfile(.lut8, pcs: "XYZ ", gridPoints: 3, node: Self.affine)) == nil)
        func changed(at offset: Int, to replacement: [UInt8]) -> Data {
            var bytes = valid
            bytes.replaceSubrange(offset..<(offset + replacement.count), with: replacement)
            return Data(bytes)
        }
        // The A2B0 element follows the header (128), the tag table (4 + 2 x 12) and the white point (20).
        let element = 128 + 4 + 24 + 20
        #expect(valid[element..<(element + 4)].elementsEqual("mft2".utf8))
        #expect(CMYKProfile(iccData: changed(at: element + 8, to: [3])) == nil)  // three inputs
        #expect(CMYKProfile(iccData: changed(at: element + 10, to: [1])) == nil)  // one grid point
        #expect(CMYKProfile(iccData: changed(at: element + 10, to: [255])) == nil)  // a table past the element
        #expect(CMYKProfile(iccData: changed(at: element + 48, to: [0xFF, 0xFF])) == nil)  // curves past it
        #expect(CMYKProfile(iccData: changed(at: element, to: Array("mBA ".utf8))) == nil)
        #expect(CMYKProfile(iccData: changed(at: 144, to: Array("B2A0".utf8))) == nil)  // no A2B0
        for length in stride(from: 0, to: valid.count, by: 5) {
            #expect(CMYKProfile(iccData: Data(valid.prefix(length))) == nil)
        }
        // Random damage never traps; whatever still parses converts a row to opaque pixels.
        var generator = SeededGenerator(seed: 13)
        for kind in Self.tableKinds + [.lutAtoB(matrix: true)] {
            let data = SyntheticICC.cmykProfile(kind, gridPoints: 3, node: Self.affine)
            for damaged in generator.mutations(of: data, count: 250, from: 128) {
                guard let profile = CMYKProfile(iccData: damaged) else { continue }
                var row = (0..<64).map { UInt8(truncatingIfNeeded: $0 * 37) }
                row.withUnsafeMutableBufferPointer { profile.convert($0.baseAddress!, width: 16) }
                #expect(stride(from: 3, to: 64, by: 4).allSatisfy { row[$0] == 255 })
            }
        }
    }

    /// The inks of `Fixtures/cmyk/patches.jpg`, row by row, 16x16 pixels each (scripts/make-cmyk-fixture.py).
    static let patchInks: [[UInt8]] = [
        [0, 0, 0, 0], [255, 0, 0, 0], [0, 255, 0, 0], [0, 0, 255, 0],
        [0, 0, 0, 255], [255, 255, 255, 255], [128, 128, 128, 0], [64, 32, 16, 8],
        [200, 100, 50, 25], [30, 180, 220, 60], [240, 40, 200, 0], [10, 10, 10, 200],
        [90, 160, 30, 120], [170, 85, 255, 40], [51, 102, 153, 204], [255, 255, 0, 0],
    ]

    /// A press-like profile: Lab from a simple subtractive model, in lut16's legacy encoding.
    static let pressProfile = SyntheticICC.cmykProfile(.lut16, gridPoints: 9, inputCurve: { pow($0, 0.9) }) { ink in
        let (c, m, y, k) = (ink[0], ink[1], ink[2], ink[3])
        let lightness = 96 * (1 - 0.55 * c) * (1 - 0.45 * m) * (1 - 0.12 * y) * (1 - 0.85 * k) + 3
        let a = 70 * m - 35 * c - 10 * y * (1 - m)
        let b = 80 * y - 45 * c - 25 * m * (1 - y)
        return [lightness / 100, (a + 128) / 255, (b + 128) / 255].map { $0 * 65280 / 65535 }
    }

    @Test func aProfileOverOneMebibyteConvertsTheJPEGItIsIn() throws {
        // Press profiles carry several tables (A2B0-2, B2A0-2): one of 17 points a side is 1.8 MB, past
        // the 1 MiB an RGB profile is read to. One table of 21 points is 1.17 MB.
        let large = SyntheticICC.cmykProfile(.lut16, gridPoints: 21, node: Self.affine)
        #expect(large.count > 1 << 20)
        let profile = try #require(CMYKProfile(iccData: large))
        let plain = try Fixtures.data("cmyk", "patches.jpg")
        let jpeg = SyntheticICC.embedding(large, inJPEG: plain)
        let bitmap = try ImageDecoders.JPEG().decode(
            jpeg, context: ImageDecodingContext(header: try ImageHeader.parse(plain)))
        for (index, ink) in Self.patchInks.enumerated() {
            let (x, y) = (16 * (index % 4) + 8, 16 * (index / 4) + 8)
            let pixel = (0..<3).map { Int(bitmap.pixels[(y * 64 + x) * 4 + $0]) }
            #expect(zip(pixel, Self.converted(profile, ink)).allSatisfy { abs($0 - $1) <= 2 }, "patch \(index)")
        }
    }

    @Test func theFuzzersSeedIsTheFixtureWithThePressProfile() throws {
        // Fixtures/cmyk/patches-press-profile.jpg seeds the fuzzer's jpeg target with a CMYK profile.
        let seed = SyntheticICC.embedding(Self.pressProfile, inJPEG: try Fixtures.data("cmyk", "patches.jpg"))
        #expect(try Fixtures.data("cmyk", "patches-press-profile.jpg") == seed)
    }

    @Test func aCMYKJPEGConvertsThroughItsProfileWhateverTheScaleAndSplit() async throws {
        let plain = try Fixtures.data("cmyk", "patches.jpg")
        let profile = try #require(CMYKProfile(iccData: Self.pressProfile))
        let expected = Self.patchInks.map { Self.converted(profile, $0) }
        let whole = SyntheticICC.embedding(Self.pressProfile, inJPEG: plain)
        let split = SyntheticICC.embedding(Self.pressProfile, inJPEG: plain, segmentSize: 4000)
        #expect(split.count > whole.count)  // several APP2 segments
        let context = ImageDecodingContext(header: try ImageHeader.parse(plain))
        let naive = try ImageDecoders.JPEG().decode(plain, context: context)
        for data in [whole, split] {
            let bitmap = try ImageDecoders.JPEG().decode(data, context: context)
            for (index, colour) in expected.enumerated() {
                let (x, y) = (16 * (index % 4) + 8, 16 * (index / 4) + 8)
                let pixel = (0..<3).map { Int(bitmap.pixels[(y * 64 + x) * 4 + $0]) }
                #expect(zip(pixel, colour).allSatisfy { abs($0 - $1) <= 2 }, "patch \(index): \(pixel) vs \(colour)")
            }
        }
        // Without the profile the ink is multiplied out: the patches of ink come out other colours.
        let naiveCyan = (0..<3).map { Int(naive.pixels[(8 * 64 + 24) * 4 + $0]) }
        #expect(naiveCyan != expected[1])
        // Through the store: at 8 at the smallest DCT scale, at 44 decoded at 6/8 and resized as rows
        // decode (smaller first: a larger variant would serve the smaller request).
        let folder = TemporaryDirectory("cmyk")
        let url = folder.url.appendingPathComponent("patches.jpg")
        try whole.write(to: url)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        for width in [8, 44] {
            let bitmap = try await store.image(for: ImageRequest(url: url, targetWidth: CGFloat(width)))
            #expect(bitmap.width == width)
            for (index, colour) in expected.enumerated() {
                func centre(_ patch: Int) -> Int { Int((Double(patch) + 0.5) * Double(width) / 4) }
                let (x, y) = (centre(index % 4), centre(index / 4))
                let pixel = (0..<3).map { Int(bitmap.pixels[(y * width + x) * 4 + $0]) }
                #expect(
                    zip(pixel, colour).allSatisfy { abs($0 - $1) <= 3 },
                    "\(width): patch \(index): \(pixel) vs \(colour)")
            }
        }
    }

    @Test func aCMYKJPEGWhoseEXIFSaysAdobeRGBIsConvertedOnceNotAgainAsAdobeRGB() async throws {
        // A camera's Adobe RGB photo turned CMYK in an editor keeps the camera's EXIF (ColorSpace
        // uncalibrated, interoperability index R03). Its ink comes out of the decoder as sRGB already,
        // through its profile (here one past the 1 MiB an RGB profile is read to) or multiplied out.
        let plain = try Fixtures.data("cmyk", "patches.jpg")
        let large = SyntheticICC.cmykProfile(.lut16, gridPoints: 21, node: Self.affine)
        let adobeEXIF = ColorProfileTests.colorSpaceEXIF(
            colorSpace: 0xFFFF, interoperabilityIndex: "R03", bigEndian: false)
        let folder = TemporaryDirectory("cmyk-exif")
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        for (name, jpeg) in [("no-profile", plain), ("large-profile", SyntheticICC.embedding(large, inJPEG: plain))] {
            let withEXIF = ColorProfileTests.embedding(exif: adobeEXIF, inJPEG: jpeg)
            #expect(ColorProfile.embedded(in: withEXIF, format: .jpeg) == nil, "\(name): the EXIF gave a profile")
            var images: [Bitmap] = []
            for (suffix, data) in [("", jpeg), ("-exif", withEXIF)] {
                let url = folder.url.appendingPathComponent(name + suffix + ".jpg")
                try data.write(to: url)
                images.append(try await store.image(for: ImageRequest(url: url)))
            }
            // The cyan patch, at (24, 8), makes what changes easy to read.
            let changed = zip(images[0].pixels, images[1].pixels).filter { $0 != $1 }.count
            #expect(
                changed == 0,
                "\(name): \(changed) samples changed, cyan \(images[0].pixel(x: 24, y: 8)) to \(images[1].pixel(x: 24, y: 8))"
            )
        }
        // A colour JPEG with that EXIF is still Adobe RGB, also when a broken profile (a segment twice)
        // follows the EXIF.
        let colour = try SampleImages.jpeg(width: 20, height: 10)
        let broken = SyntheticICC.embedding(
            SyntheticICC.displayP3(), inJPEG: colour, segmentSize: 100, order: [0, 1, 1, 2, 3])
        for jpeg in [colour, broken] {
            let profile = ColorProfile.embedded(
                in: ColorProfileTests.embedding(exif: adobeEXIF, inJPEG: jpeg), format: .jpeg)
            #expect(profile?.colorants == ColorProfile.adobeRGB?.colorants)
        }
    }
}
