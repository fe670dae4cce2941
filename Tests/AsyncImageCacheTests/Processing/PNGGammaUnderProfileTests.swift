import Foundation
import Testing

@testable import AsyncImageCache

#if os(Linux)
/// A PNG with both a gAMA chunk and an ICC profile: the profile converts the samples as stored and the
/// gAMA is ignored, as the PNG specification asks of colour-managing decoders (libpng would otherwise
/// correct by the gAMA first and the tone curve would apply twice). PngSuite's files all carry a gAMA
/// of 1.0, far from sRGB's, so libpng corrects them.
@Suite("PNG gamma under an ICC profile")
struct PNGGammaUnderProfileTests {
    /// Sequential RGB, Adam7-interlaced RGB, 16-bit RGB and gray: the streamed and both whole paths.
    static let colourFiles = ["basn2c08", "basi2c08", "basn2c16"]

    static func pngSuite(_ name: String) throws -> Data { try Fixtures.data("pngsuite", name + ".png") }

    @Test func theStoreConvertsTheStoredSamplesAndIgnoresTheGamma() async throws {
        let folder = TemporaryDirectory("png-gamma")
        let p3 = SyntheticICC.displayP3()
        let gray = SyntheticICC.grayProfile(curve: .gamma(1.8))
        var files: [(String, Data)] = []
        for name in Self.colourFiles + ["basn0g08"] {
            let original = try Self.pngSuite(name)
            let withoutGamma = SyntheticPNG.removingChunks("gAMA", from: original)
            let profile = name == "basn0g08" ? gray : p3
            files += [
                (name + "-stored.png", withoutGamma),
                (name + "-profile.png", SyntheticICC.embedding(profile, inPNG: original)),
                (name + "-profile-no-gamma.png", SyntheticICC.embedding(profile, inPNG: withoutGamma)),
                (name + "-gamma.png", original),
            ]
        }
        for (name, data) in files { try data.write(to: folder.url.appendingPathComponent(name)) }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        func image(_ name: String) async throws -> Bitmap {
            // The files are 32 pixels wide: 24 resizes (streamed where the file allows).
            try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(name), targetWidth: 24))
        }
        for name in Self.colourFiles + ["basn0g08"] {
            let profiled = try await image(name + "-profile.png")
            #expect(profiled == (try await image(name + "-profile-no-gamma.png")), "\(name)")
            let stored = try await image(name + "-stored.png")
            let error =
                name == "basn0g08"
                ? ColorProfileTests.largestError(
                    profiled, from: stored, decode: { pow($0, 1.8) }, matrix: GrayColorProfileTests.identity)
                : ColorProfileTests.largestError(
                    profiled, from: stored, decode: ColorProfileTests.srgbDecode,
                    matrix: ColorProfileTests.displayP3ToSRGB)
            #expect(error <= 1, "\(name)")
            // Without a profile the gAMA still counts: libpng brightens the linear samples.
            #expect(try await image(name + "-gamma.png") != stored, "\(name)")
        }
    }

    @Test func aProfileTheStoreCannotReadLeavesTheGammaToLibpng() throws {
        // A profile of lookup tables only (its rXYZ renamed A2B0): no conversion, so the gAMA stays.
        var lookupOnly = [UInt8](SyntheticICC.displayP3())
        lookupOnly.replaceSubrange(132..<136, with: Array("A2B0".utf8))
        #expect(ColorProfile(iccData: Data(lookupOnly)) == nil)
        for name in Self.colourFiles {
            let original = try Self.pngSuite(name)
            let embedded = SyntheticICC.embedding(Data(lookupOnly), inPNG: original)
            #expect(ImageDecoders.PNG.ignoringGammaUnderProfile(embedded) == embedded)
            let context = ImageDecodingContext(header: try ImageHeader.parse(original))
            #expect(
                try ImageDecoders.PNG().decode(embedded, context: context)
                    == (try ImageDecoders.PNG().decode(original, context: context)), "\(name)")
        }
    }

    @Test func onlyTheGammaChunksLeaveAndOnlyUnderAProfile() throws {
        let original = try Self.pngSuite("basn2c08")
        // No profile: the very same bytes.
        #expect(ImageDecoders.PNG.ignoringGammaUnderProfile(original) == original)
        // Under a profile the gAMA chunk leaves, and nothing else.
        let embedded = SyntheticICC.embedding(SyntheticICC.displayP3(), inPNG: original)
        let stripped = ImageDecoders.PNG.ignoringGammaUnderProfile(embedded)
        #expect(stripped == SyntheticPNG.removingChunks("gAMA", from: embedded))
        #expect(stripped.count == embedded.count - 16)
        // A slice of a larger buffer is read from its own start.
        let padded = Data([1, 2, 3]) + embedded
        #expect(ImageDecoders.PNG.ignoringGammaUnderProfile(padded[3...]) == stripped)
        // Cut anywhere, nothing traps.
        for length in stride(from: 0, to: embedded.count, by: 7) {
            _ = ImageDecoders.PNG.ignoringGammaUnderProfile(embedded.prefix(length))
        }
        // Damaged anywhere, nothing traps, and the decoder gives an image or a typed error.
        let context = ImageDecodingContext(header: try ImageHeader.parse(original))
        var generator = SeededGenerator(seed: 7)
        for damaged in generator.mutations(of: embedded, count: 300, from: 8) {
            #expect(ImageDecoders.PNG.ignoringGammaUnderProfile(damaged).count <= damaged.count)
            _ = try? ImageDecoders.PNG().decode(damaged, context: context)
        }
    }
}
#endif
