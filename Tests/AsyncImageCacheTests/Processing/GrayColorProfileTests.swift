import Foundation
import Testing

@testable import AsyncImageCache

/// Gray ICC profiles (one `kTRC` curve), as Photoshop embeds in grayscale JPEGs and PNGs: read, used
/// for grayscale images only, and converted through the curve alone.
@Suite("Gray colour profiles")
struct GrayColorProfileTests {
    static let identity = [[1.0, 0, 0], [0, 1, 0], [0, 0, 1]]

    /// Every gray level once, with alpha varying.
    static let grays = Bitmap(
        width: 256, height: 1, pixels: (0..<256).flatMap { [UInt8($0), UInt8($0), UInt8($0), UInt8($0 ^ 0x5A)] })

    @Test func aGrayProfilesCurveGivesTheLuminanceOfEveryLevel() throws {
        let profile = try #require(ColorProfile(iccData: SyntheticICC.grayProfile(curve: .gamma(1.8))))
        #expect(profile.isGray)
        #expect(!profile.isSRGB)
        let converted = Self.grays.convertedToSRGB(from: profile)
        // Linear light pow(level, 1.8), encoded with sRGB's curve, on all three channels; alpha untouched.
        #expect(
            ColorProfileTests.largestError(converted, from: Self.grays, decode: { pow($0, 1.8) }, matrix: Self.identity)
                <= 1)
        for offset in stride(from: 0, to: converted.pixels.count, by: 4) {
            let level = converted.pixels[offset]
            #expect(converted.pixels[offset + 1] == level && converted.pixels[offset + 2] == level)
        }
        // A mid gray of 128 is 0.29 in linear light under gamma 1.8 (0.22 under sRGB): lighter.
        #expect(converted.pixels[128 * 4] > 140)
    }

    @Test func aGrayProfileWithSRGBsCurveChangesNothing() throws {
        let profile = try #require(ColorProfile(iccData: SyntheticICC.grayProfile(curve: .sRGB)))
        #expect(profile.isGray)
        #expect(profile.isSRGB)
    }

    @Test func aGrayProfileWithoutItsCurveOrInLabIsRefused() throws {
        let valid = [UInt8](SyntheticICC.grayProfile(curve: .gamma(1.8)))
        #expect(ColorProfile(iccData: Data(valid)) != nil)
        func changed(at offset: Int, to replacement: String) -> Data {
            var bytes = valid
            bytes.replaceSubrange(offset..<(offset + 4), with: Array(replacement.utf8))
            return Data(bytes)
        }
        // The tag table's second entry is kTRC: renamed, there is no curve.
        #expect(valid[(132 + 12)..<(132 + 16)].elementsEqual("kTRC".utf8))
        #expect(ColorProfile(iccData: changed(at: 132 + 12, to: "bTRC")) == nil)
        // A Lab connection space makes the curve give L*, not luminance: not read.
        #expect(ColorProfile(iccData: changed(at: 20, to: "Lab ")) == nil)
        // An RGB profile needs colorants, which a gray one lacks.
        #expect(ColorProfile(iccData: SyntheticICC.grayProfile(curve: .gamma(1.8), colorSpace: "RGB ")) == nil)
        for length in 0..<valid.count { #expect(ColorProfile(iccData: Data(valid.prefix(length))) == nil) }
    }

    @Test func aGrayProfileCountsForAGrayscaleJPEGOnly() throws {
        let profile = SyntheticICC.grayProfile(curve: .gamma(1.8))
        let gray = SyntheticICC.embedding(profile, inJPEG: try Fixtures.data("jpeg", "video-005.gray.jpeg"))
        let colour = SyntheticICC.embedding(profile, inJPEG: try SampleImages.jpeg(width: 20, height: 10))
        #expect(ColorProfile.embedded(in: gray, format: .jpeg)?.isGray == true)
        #expect(ColorProfile.embeddedICCData(in: colour, format: .jpeg) == profile)
        #expect(ColorProfile.embedded(in: colour, format: .jpeg) == nil)
        // An RGB profile on a grayscale JPEG is still read, as before.
        let p3 = SyntheticICC.embedding(
            SyntheticICC.displayP3(), inJPEG: try Fixtures.data("jpeg", "video-005.gray.jpeg"))
        #expect(ColorProfile.embedded(in: p3, format: .jpeg)?.isGray == false)
    }

    #if os(Linux)
    @Test func aGrayProfileCountsForAGrayscalePNGOnly() throws {
        let profile = SyntheticICC.grayProfile(curve: .gamma(1.8))
        for (name, isGray) in [("basn0g08.png", true), ("basn4a08.png", true), ("basn2c08.png", false)] {
            let png = SyntheticICC.embedding(
                profile, inPNG: SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", name)))
            #expect((ColorProfile.embedded(in: png, format: .png) != nil) == isGray, "\(name)")
        }
    }
    #endif

    @Test func theStoreConvertsGrayscaleImagesWithAGrayProfileAndLeavesColourOnesAlone() async throws {
        let folder = TemporaryDirectory("gray-profiles")
        let profile = SyntheticICC.grayProfile(curve: .gamma(1.8))
        let grayJPEG = try Fixtures.data("jpeg", "video-005.gray.jpeg")
        let colourJPEG = try SampleImages.jpeg(width: 300, height: 200)
        var files = [
            ("gray.jpg", grayJPEG), ("gray-profiled.jpg", SyntheticICC.embedding(profile, inJPEG: grayJPEG)),
            ("colour.jpg", colourJPEG),
            ("colour-gray-profile.jpg", SyntheticICC.embedding(profile, inJPEG: colourJPEG)),
        ]
        #if os(Linux)
        // PngSuite's files carry a gAMA of 1.0, which the decoder would apply; these have none.
        for name in ["basn0g08", "basn4a08", "basn2c08"] {
            let png = SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", name + ".png"))
            files += [(name + ".png", png), (name + "-profiled.png", SyntheticICC.embedding(profile, inPNG: png))]
        }
        #endif
        for (name, data) in files { try data.write(to: folder.url.appendingPathComponent(name)) }
        let conversions = LockedBox([String]())
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.stageObserver = { stage, url in
                if stage == .convertColor { conversions.withLock { $0.append(url.lastPathComponent) } }
            }
        }
        func image(_ name: String) async throws -> Bitmap {
            try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(name), targetWidth: 24))
        }
        func gamma18Error(_ converted: Bitmap, from plain: Bitmap) -> Int {
            ColorProfileTests.largestError(converted, from: plain, decode: { pow($0, 1.8) }, matrix: Self.identity)
        }
        let gray = try await image("gray.jpg")
        let grayProfiled = try await image("gray-profiled.jpg")
        #expect(grayProfiled != gray)
        #expect(gamma18Error(grayProfiled, from: gray) <= 1)
        #expect(try await image("colour-gray-profile.jpg") == (try await image("colour.jpg")))
        var expected = ["gray-profiled.jpg"]
        #if os(Linux)
        for name in ["basn0g08", "basn4a08"] {
            let plain = try await image(name + ".png")
            let profiled = try await image(name + "-profiled.png")
            #expect(profiled != plain, "\(name)")
            #expect(gamma18Error(profiled, from: plain) <= 1, "\(name)")
        }
        #expect(try await image("basn2c08-profiled.png") == (try await image("basn2c08.png")))
        expected += ["basn0g08-profiled.png", "basn4a08-profiled.png"]
        #endif
        #expect(conversions.withLock { $0 } == expected)
    }
}
