import Foundation
import Testing

@testable import AsyncImageCache

/// Embedded ICC profiles: read from JPEG, PNG and WebP, and converted to sRGB as the colour spaces'
/// published matrices say (worked out here independently, in D65, from the colour spaces' definitions).
@Suite("Colour profiles")
struct ColorProfileTests {
    /// Linear Display P3 to linear sRGB.
    static let displayP3ToSRGB = [
        [1.224940, -0.224940, 0], [-0.042057, 1.042057, 0], [-0.019638, -0.078636, 1.098273],
    ]
    /// Linear Adobe RGB (1998) to linear sRGB.
    static let adobeRGBToSRGB = [[1.398283, -0.398283, 0], [0, 1, 0], [0, -0.042929, 1.042929]]

    static func srgbDecode(_ value: Double) -> Double {
        value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }

    static func srgbEncode(_ value: Double) -> Int {
        let clamped = min(max(value, 0), 1)
        let encoded = clamped <= 0.0031308 ? clamped * 12.92 : 1.055 * pow(clamped, 1 / 2.4) - 0.055
        return Int((encoded * 255).rounded())
    }

    /// Every combination of a few levels per channel, one pixel each, with alpha varying.
    static let swatches: Bitmap = {
        let levels = [0, 19, 37, 90, 128, 180, 230, 255]
        var pixels: [UInt8] = []
        for r in levels {
            for g in levels { for b in levels { pixels += [UInt8(r), UInt8(g), UInt8(b), UInt8(r ^ b)] } }
        }
        return Bitmap(width: levels.count * levels.count, height: levels.count, pixels: pixels)
    }()

    /// The largest difference, in levels, between `converted` and `source` put through `decode` and
    /// `matrix` by hand; alpha must be untouched.
    static func largestError(
        _ converted: Bitmap, from source: Bitmap, decode: (Double) -> Double, matrix: [[Double]]
    ) -> Int {
        var largest = 0
        for offset in stride(from: 0, to: source.pixels.count, by: 4) {
            let linear = (0..<3).map { decode(Double(source.pixels[offset + $0]) / 255) }
            for row in 0..<3 {
                let expected = srgbEncode((0..<3).reduce(0) { $0 + matrix[row][$1] * linear[$1] })
                largest = max(largest, abs(Int(converted.pixels[offset + row]) - expected))
            }
            if converted.pixels[offset + 3] != source.pixels[offset + 3] { return .max }
        }
        return largest
    }

    @Test func aProfileMadeFromSRGBsPrimariesIsSRGBAndChangesNothing() throws {
        let profile = try #require(ColorProfile(iccData: SyntheticICC.profile(.sRGB, curve: .sRGB)))
        #expect(profile.isSRGB)
        // The Bradford adaptation the test profiles are written with (ColorProfile's chromaticity
        // initializer) lands on the colorants of IEC 61966-2-1's profile.
        for (made, standard) in zip(profile.colorants, ColorProfile.sRGBColorants) {
            for (a, b) in zip(made, standard) { #expect(abs(a - b) < 0.0005) }
        }
        #expect(
            Self.largestError(
                Self.swatches.convertedToSRGB(from: profile), from: Self.swatches,
                decode: Self.srgbDecode, matrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]) == 0)
    }

    @Test(arguments: [false, true])
    func displayP3ColoursBecomeWhatThePublishedMatrixGives(version4: Bool) throws {
        let data = SyntheticICC.profile(.displayP3, curve: .sRGB, version4: version4)
        let profile = try #require(ColorProfile(iccData: data))
        #expect(!profile.isSRGB)
        let converted = Self.swatches.convertedToSRGB(from: profile)
        #expect(
            Self.largestError(converted, from: Self.swatches, decode: Self.srgbDecode, matrix: Self.displayP3ToSRGB)
                <= 1)
        // Read as sRGB, P3's pure green would be about 23 levels too dull in green's neighbours; it is changed.
        #expect(converted.pixels != Self.swatches.pixels)
    }

    @Test func aProfileFromChromaticitiesConvertsAsThePublishedMatrixSays() throws {
        // What a HEIF's or AVIF's nclx colour description gives: primaries, white point, one curve.
        let p3 = try #require(
            ColorProfile(
                red: (0.68, 0.32), green: (0.265, 0.69), blue: (0.15, 0.06), white: (0.3127, 0.3290), curve: .sRGB))
        let converted = Self.swatches.convertedToSRGB(from: p3)
        #expect(
            Self.largestError(converted, from: Self.swatches, decode: Self.srgbDecode, matrix: Self.displayP3ToSRGB)
                <= 1)
        let srgb = try #require(
            ColorProfile(
                red: (0.64, 0.33), green: (0.30, 0.60), blue: (0.15, 0.06), white: (0.3127, 0.3290), curve: .sRGB))
        #expect(srgb.isSRGB)
        // Unspecified primaries come from libheif as zeros; collinear ones span no gamut.
        #expect(ColorProfile(red: (0, 0), green: (0, 0), blue: (0, 0), white: (0, 0), curve: .sRGB) == nil)
        #expect(
            ColorProfile(red: (0.2, 0.2), green: (0.3, 0.3), blue: (0.4, 0.4), white: (0.3127, 0.3290), curve: .sRGB)
                == nil)
    }

    @Test func adobeRGBColoursWithAGammaCurveBecomeWhatThePublishedMatrixGives() throws {
        let profile = try #require(ColorProfile(iccData: SyntheticICC.profile(.adobeRGB, curve: .gamma(563.0 / 256))))
        let converted = Self.swatches.convertedToSRGB(from: profile)
        #expect(
            Self.largestError(
                converted, from: Self.swatches, decode: { pow($0, 563.0 / 256) }, matrix: Self.adobeRGBToSRGB)
                <= 1)
    }

    @Test func aTableCurveIsInterpolatedAndGraysStayGray() throws {
        let entries = (0..<1024).map { UInt16((pow(Double($0) / 1023, 1.8) * 65535).rounded()) }
        let profile = try #require(ColorProfile(iccData: SyntheticICC.profile(.displayP3, curve: .table(entries))))
        for level in stride(from: 0.0, through: 1.0, by: 0.01) {
            #expect(abs(profile.curves[0].linear(level) - pow(level, 1.8)) < 0.0002)
        }
        let grays = Bitmap(width: 256, height: 1, pixels: (0..<256).flatMap { [UInt8($0), UInt8($0), UInt8($0), 255] })
        let converted = grays.convertedToSRGB(from: profile)
        for offset in stride(from: 0, to: converted.pixels.count, by: 4) {
            let (r, g, b) = (
                Int(converted.pixels[offset]), Int(converted.pixels[offset + 1]), Int(converted.pixels[offset + 2])
            )
            #expect(max(r, g, b) - min(r, g, b) <= 1, "gray \(offset / 4) became \(r), \(g), \(b)")
        }
    }

    /// ICC.1's parametric curves, written out here from the specification's table, for each type with
    /// parameters that exercise both branches.
    static let parametricCurves: [(type: Int, parameters: [Double], formula: @Sendable (Double) -> Double)] = [
        (0, [2.2], { pow($0, 2.2) }),
        (1, [2.0, 1.25, -0.25], { $0 >= 0.2 ? pow(1.25 * $0 - 0.25, 2.0) : 0 }),
        (2, [1.8, 1.1, -0.1, 0.05], { $0 >= 0.1 / 1.1 ? pow(1.1 * $0 - 0.1, 1.8) + 0.05 : 0.05 }),
        (
            3, [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045],
            { $0 >= 0.04045 ? pow(($0 + 0.055) / 1.055, 2.4) : $0 / 12.92 }
        ),
        (4, [2.0, 0.9, 0.1, 0.5, 0.2, 0.02, 0.01], { $0 >= 0.2 ? pow(0.9 * $0 + 0.1, 2.0) + 0.02 : 0.5 * $0 + 0.01 }),
    ]

    @Test(arguments: 0..<5)
    func everyParametricCurveTypeFollowsTheSpecification(index: Int) throws {
        let (type, parameters, formula) = Self.parametricCurves[index]
        let data = SyntheticICC.profile(.displayP3, curve: .parametric(type: type, parameters))
        let curve = try #require(ColorProfile(iccData: data)).curves[0]
        for step in 0...100 {
            let x = Double(step) / 100
            // The parameters are stored as 15.16 fixed point, good to about 1e-5.
            #expect(abs(curve.linear(x) - min(max(formula(x), 0), 1)) < 0.0005, "type \(type) at \(x)")
        }
    }

    @Test func aCurveWithNoEntriesIsTheIdentity() throws {
        let curve = try #require(ColorProfile(iccData: SyntheticICC.profile(.displayP3, curve: .table([])))).curves[0]
        for step in 0...10 { #expect(curve.linear(Double(step) / 10) == Double(step) / 10) }
    }

    @Test func oversizedProfilesAndCurvesAreRefusedBeforeTheyCostMemory() throws {
        // 70,000 curve entries (the longest real ones have 4,096), and a profile past 1 MiB.
        let longCurve = SyntheticICC.profile(.displayP3, curve: .table([UInt16](repeating: 1000, count: 70_000)))
        #expect(ColorProfile(iccData: longCurve) == nil)
        var padded = SyntheticICC.displayP3()
        padded.append(Data(count: ColorProfile.largestProfile))
        #expect(ColorProfile(iccData: padded) == nil)
        // A JPEG whose APP2 segments add up past the limit has no profile: they are not even joined.
        let jpeg = SyntheticICC.embedding(padded, inJPEG: try SampleImages.jpeg(width: 20, height: 10))
        #expect(ColorProfile.embeddedICCData(in: jpeg, format: .jpeg) == nil)
        #expect(try ImageDecoders.Default().decode(jpeg, context: decodingContext(.jpeg)).width == 20)
    }

    @Test func damagedOrOtherProfilesAreRefusedNotTrusted() {
        let valid = [UInt8](SyntheticICC.displayP3())
        #expect(ColorProfile(iccData: Data(valid)) != nil)
        // Every truncation: the declared size no longer fits, or a tag runs past the end.
        for length in 0..<valid.count { #expect(ColorProfile(iccData: Data(valid.prefix(length))) == nil) }
        func changed(at offset: Int, to replacement: String) -> Data {
            var bytes = valid
            bytes.replaceSubrange(offset..<(offset + 4), with: Array(replacement.utf8))
            return Data(bytes)
        }
        #expect(ColorProfile(iccData: changed(at: 16, to: "CMYK")) == nil)  // not RGB
        #expect(ColorProfile(iccData: changed(at: 20, to: "Lab ")) == nil)  // Lab connection space
        #expect(ColorProfile(iccData: changed(at: 132, to: "A2B0")) == nil)  // no rXYZ: tables only
        // The red colorant three times: no matrix to invert.
        var flat = valid
        func elementOffset(_ tag: Int) -> Int {
            valid[(136 + 12 * tag)..<(140 + 12 * tag)].reduce(0) { $0 << 8 | Int($1) }
        }
        for tag in [1, 2] {
            flat.replaceSubrange(
                (elementOffset(tag) + 8)..<(elementOffset(tag) + 20),
                with: valid[(elementOffset(0) + 8)..<(elementOffset(0) + 20)])
        }
        #expect(ColorProfile(iccData: Data(flat)) == nil)
        // Random damage never crashes; whatever still parses gives finite curves.
        var generator = SeededGenerator(seed: 11)
        for bytes in generator.mutations(of: Data(valid), count: 2000, from: 0) {
            if let profile = ColorProfile(iccData: bytes) {
                #expect(
                    profile.curves.allSatisfy { curve in (0...8).allSatisfy { curve.linear(Double($0) / 8).isFinite } })
            }
        }
    }

    @Test func theFuzzersSeedProfilesAreWhatTheTestsWrite() throws {
        for (name, data) in ICCSeeds.all {
            #expect(try Fixtures.data("icc", name) == data, "\(name)")
            // Each parses as what it is: an RGB or gray profile, or a CMYK one.
            #expect((ColorProfile(iccData: data) != nil) != (CMYKProfile(iccData: data) != nil), "\(name)")
        }
    }

    @Test(arguments: [nil, [1, 0], [0, 1]] as [[Int]?])
    func aJPEGsProfileIsJoinedFromItsSegments(order: [Int]?) throws {
        let profile = SyntheticICC.displayP3()
        let jpeg = try SampleImages.jpeg(width: 20, height: 10)
        // Split in two when an order is given, written in that order.
        let embedded = SyntheticICC.embedding(
            profile, inJPEG: jpeg, segmentSize: order == nil ? 65_519 : 300, order: order)
        #expect(ColorProfile.embeddedICCData(in: embedded, format: .jpeg) == profile)
        #expect(ColorProfile.embeddedICCData(in: jpeg, format: .jpeg) == nil)
    }

    /// A segment may hold no profile bytes at all, only its tag, number and count (libjpeg-turbo's
    /// `jpeg_read_icc_profile` takes it): the profile is joined from the others. Before, such a segment
    /// was passed over, counted missing, and the profile lost.
    @Test(arguments: [65_519, 300])
    func aJPEGsProfileWithAnEmptyLastSegmentIsJoined(segmentSize: Int) throws {
        let profile = SyntheticICC.displayP3()
        let jpeg = try SampleImages.jpeg(width: 20, height: 10)
        let embedded = SyntheticICC.embedding(profile, inJPEG: jpeg, segmentSize: segmentSize, emptyLast: true)
        #expect(embedded.count == jpeg.count + profile.count + (segmentSize == 300 ? 3 : 2) * 18)
        #expect(ColorProfile.embeddedICCData(in: embedded, format: .jpeg) == profile)
    }

    @Test func aJPEGWithASegmentMissingOrTwiceHasNoProfile() throws {
        let profile = SyntheticICC.displayP3()
        #expect(profile.count > 300 && profile.count <= 400)  // four segments of 100 bytes
        let jpeg = try SampleImages.jpeg(width: 20, height: 10)
        let missing = SyntheticICC.embedding(profile, inJPEG: jpeg, segmentSize: 100, order: [0, 1, 3])
        let twice = SyntheticICC.embedding(profile, inJPEG: jpeg, segmentSize: 100, order: [0, 1, 1, 2, 3])
        #expect(ColorProfile.embeddedICCData(in: missing, format: .jpeg) == nil)
        #expect(ColorProfile.embeddedICCData(in: twice, format: .jpeg) == nil)
        #expect(try ImageDecoders.Default().decode(missing, context: decodingContext(.jpeg)).width == 20)
    }

    #if os(Linux)
    @Test func aPNGsProfileComesFromItsICCPChunk() throws {
        let profile = SyntheticICC.displayP3()
        let png = try SampleImages.png(width: 12, height: 8)
        let embedded = SyntheticICC.embedding(profile, inPNG: png)
        #expect(ColorProfile.embeddedICCData(in: embedded, format: .png) == profile)
        #expect(ColorProfile.embeddedICCData(in: png, format: .png) == nil)
        // The chunk changes nothing about the pixels libpng gives.
        #expect(
            try ImageDecoders.PNG().decode(embedded, context: decodingContext(.png))
                == (try ImageDecoders.PNG().decode(png, context: decodingContext(.png))))
    }
    #endif

    @Test func aWebPsProfileComesFromItsICCPChunk() throws {
        let profile = [UInt8](SyntheticICC.displayP3())
        var bytes = [UInt8](try Fixtures.data("webp", "lossy_alpha.webp"))
        #expect(ColorProfile.embeddedICCData(in: Data(bytes), format: .webp) == nil)
        // ICCP goes right after VP8X (20 + 10 bytes in), whose flags then say so.
        let chunk =
            Array("ICCP".utf8) + (0..<4).map { UInt8(truncatingIfNeeded: profile.count >> (8 * $0)) } + profile
            + (profile.count % 2 == 1 ? [0] : [])
        bytes.insert(contentsOf: chunk, at: 30)
        bytes[20] |= 0x20
        let riffSize = bytes.count - 8
        for index in 0..<4 { bytes[4 + index] = UInt8(truncatingIfNeeded: riffSize >> (8 * index)) }
        #expect(ColorProfile.embeddedICCData(in: Data(bytes), format: .webp) == Data(profile))
    }

    @Test func theStoreConvertsAJPEGWithADisplayP3ProfileAndLeavesAnSRGBOneAlone() async throws {
        let folder = TemporaryDirectory("profiles")
        let jpeg = try SampleImages.jpeg(width: 300, height: 200)
        let files = [
            ("plain.jpg", jpeg),
            ("p3.jpg", SyntheticICC.embedding(SyntheticICC.displayP3(), inJPEG: jpeg)),
            ("srgb.jpg", SyntheticICC.embedding(SyntheticICC.profile(.sRGB, curve: .sRGB), inJPEG: jpeg)),
        ]
        for (name, data) in files { try data.write(to: folder.url.appendingPathComponent(name)) }
        let conversions = LockedBox([(URL, Bool)]())
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.stageObserver = { stage, url in
                if stage == .convertColor { conversions.withLock { $0.append((url, Thread.isMainThread)) } }
            }
        }
        func image(_ name: String) async throws -> Bitmap {
            try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(name), targetWidth: 150))
        }
        let plain = try await image("plain.jpg")
        let p3 = try await image("p3.jpg")
        #expect(try await image("srgb.jpg") == plain)
        #expect(p3 != plain)
        #expect(Self.largestError(p3, from: plain, decode: Self.srgbDecode, matrix: Self.displayP3ToSRGB) <= 1)
        let recorded = conversions.withLock { $0 }
        #expect(recorded.map(\.0.lastPathComponent) == ["p3.jpg"])
        #expect(recorded.allSatisfy { !$0.1 })
    }

    /// An EXIF TIFF structure with an Exif directory holding ColorSpace `colorSpace` (`colorSpaceCount`
    /// values, 1 as EXIF has it) and, given an index, an interoperability directory with that
    /// InteroperabilityIndex.
    static func colorSpaceEXIF(
        colorSpace: Int, colorSpaceCount: Int = 1, interoperabilityIndex: String?, bigEndian: Bool
    ) -> [UInt8] {
        ByteWriter.build { tiff in
            func entry(_ tag: Int, type: Int, count: Int = 1, value: Int, short: Bool = false) {
                tiff.uint16(tag, bigEndian: bigEndian)
                tiff.uint16(type, bigEndian: bigEndian)
                tiff.uint32(count, bigEndian: bigEndian)
                if short {
                    tiff.uint16(value, bigEndian: bigEndian)  // left-aligned in the value field
                    tiff.uint16(0, bigEndian: bigEndian)
                } else {
                    tiff.uint32(value, bigEndian: bigEndian)
                }
            }
            tiff.ascii(bigEndian ? "MM" : "II")
            tiff.uint16(42, bigEndian: bigEndian)
            tiff.uint32(8, bigEndian: bigEndian)
            // IFD0 at 8: the Exif directory's offset; 2 + 12 + 4 bytes, so the Exif directory is at 26.
            tiff.uint16(1, bigEndian: bigEndian)
            entry(0x8769, type: 4, value: 26)
            tiff.uint32(0, bigEndian: bigEndian)
            let entries = interoperabilityIndex == nil ? 1 : 2
            tiff.uint16(entries, bigEndian: bigEndian)
            entry(0xA001, type: 3, count: colorSpaceCount, value: colorSpace, short: true)
            if interoperabilityIndex != nil { entry(0xA005, type: 4, value: 26 + 2 + entries * 12 + 4) }
            tiff.uint32(0, bigEndian: bigEndian)
            if let interoperabilityIndex {
                tiff.uint16(1, bigEndian: bigEndian)
                tiff.uint16(0x0001, bigEndian: bigEndian)  // InteroperabilityIndex, ASCII, 4 bytes in place
                tiff.uint16(2, bigEndian: bigEndian)
                tiff.uint32(4, bigEndian: bigEndian)
                tiff.ascii(interoperabilityIndex)
                tiff.append([0])
                tiff.uint32(0, bigEndian: bigEndian)
            }
        }
    }

    /// `jpeg` with an EXIF APP1 segment holding `tiff` right after its SOI.
    static func embedding(exif tiff: [UInt8], inJPEG jpeg: Data) -> Data {
        var bytes = [UInt8](jpeg)
        let length = 2 + 6 + tiff.count
        let segment = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + Array("Exif".utf8) + [0, 0] + tiff
        bytes.insert(contentsOf: segment, at: 2)
        return Data(bytes)
    }

    @Test(arguments: [false, true])
    func aJPEGWhoseEXIFSaysAdobeRGBHasTheAdobeRGBProfile(bigEndian: Bool) throws {
        let jpeg = try SampleImages.jpeg(width: 20, height: 10)
        func profile(colorSpace: Int, index: String?) -> ColorProfile? {
            let exif = Self.colorSpaceEXIF(colorSpace: colorSpace, interoperabilityIndex: index, bigEndian: bigEndian)
            return ColorProfile.embedded(in: Self.embedding(exif: exif, inJPEG: jpeg), format: .jpeg)
        }
        // Uncalibrated with the DCF option-file index R03, as cameras in Adobe RGB mode write; or 2.
        let adobe = try #require(ColorProfile.adobeRGB)
        #expect(profile(colorSpace: 0xFFFF, index: "R03")?.colorants == adobe.colorants)
        #expect(profile(colorSpace: 2, index: nil)?.colorants == adobe.colorants)
        #expect(!adobe.isSRGB)
        // sRGB, uncalibrated without the index or with sRGB's (R98): no profile, drawn as sRGB.
        #expect(profile(colorSpace: 1, index: "R03") == nil)
        #expect(profile(colorSpace: 0xFFFF, index: nil) == nil)
        #expect(profile(colorSpace: 0xFFFF, index: "R98") == nil)
        // Cut short before its "R03" is whole, the EXIF declares nothing (and nothing traps).
        let full = Self.colorSpaceEXIF(colorSpace: 0xFFFF, interoperabilityIndex: "R03", bigEndian: bigEndian)
        let index = try #require(Data(full).range(of: Data("R03".utf8))).upperBound
        for length in 0..<index {
            let cut = Self.embedding(exif: Array(full.prefix(length)), inJPEG: jpeg)
            #expect(ColorProfile.embedded(in: cut, format: .jpeg) == nil, "\(length) bytes")
        }
    }

    /// ColorSpace is one SHORT; with another count its value field is empty (0) or the offset of the values
    /// (2 or more), and the first two bytes there were read as the colour space all the same.
    @Test(arguments: [0, 2, 3])
    func aColorSpaceEntryWhoseCountIsNotOneDeclaresNothing(count: Int) throws {
        let jpeg = try SampleImages.jpeg(width: 20, height: 10)
        for colorSpace in [2, 0xFFFF] {
            let exif = Self.colorSpaceEXIF(
                colorSpace: colorSpace, colorSpaceCount: count, interoperabilityIndex: "R03", bigEndian: false)
            #expect(ColorProfile.embedded(in: Self.embedding(exif: exif, inJPEG: jpeg), format: .jpeg) == nil)
        }
    }

    @Test func theAdobeRGBProfileConvertsAsThePublishedMatrixSays() throws {
        let converted = Self.swatches.convertedToSRGB(from: try #require(ColorProfile.adobeRGB))
        let error = Self.largestError(
            converted, from: Self.swatches, decode: { pow($0, 563.0 / 256) }, matrix: Self.adobeRGBToSRGB)
        #expect(error <= 1)
    }

    @Test func theStoreConvertsACameraAdobeRGBJPEGAndAnEmbeddedProfileWinsOverTheEXIF() async throws {
        let folder = TemporaryDirectory("profiles")
        let jpeg = try SampleImages.jpeg(width: 300, height: 200)
        let adobeEXIF = Self.colorSpaceEXIF(colorSpace: 0xFFFF, interoperabilityIndex: "R03", bigEndian: false)
        let files = [
            ("plain.jpg", jpeg),
            ("camera.jpg", Self.embedding(exif: adobeEXIF, inJPEG: jpeg)),
            (
                "p3-and-exif.jpg",
                Self.embedding(exif: adobeEXIF, inJPEG: SyntheticICC.embedding(SyntheticICC.displayP3(), inJPEG: jpeg))
            ),
        ]
        for (name, data) in files { try data.write(to: folder.url.appendingPathComponent(name)) }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        func image(_ name: String) async throws -> Bitmap {
            try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(name), targetWidth: 150))
        }
        let plain = try await image("plain.jpg")
        let camera = try await image("camera.jpg")
        #expect(camera != plain)
        let adobeError = Self.largestError(
            camera, from: plain, decode: { pow($0, 563.0 / 256) }, matrix: Self.adobeRGBToSRGB)
        #expect(adobeError <= 1)
        let p3 = try await image("p3-and-exif.jpg")
        #expect(Self.largestError(p3, from: plain, decode: Self.srgbDecode, matrix: Self.displayP3ToSRGB) <= 1)
    }
}
