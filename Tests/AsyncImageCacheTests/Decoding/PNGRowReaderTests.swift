#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// The PNG row reader behind the decode that resizes as it reads, and behind a whole decode that can be
/// cancelled: the same pixels as libpng's simplified API for every file it takes, and the same typed errors.
@Suite("PNG row reader", .ownThreads)
struct PNGRowReaderTests {
    let decoder = ImageDecoders.PNG()

    /// What the error tests take for a file handed to the whole-image decode: no error from the row reader.
    static let leftToTheWholeDecode = Bitmap(width: 1, height: 1, pixels: [0, 0, 0, 0])

    static let valid = PNGDecoderTests.valid
    /// PngSuite names interlaced files with an "i" as the fourth letter ("basi0g01"); its logo is not.
    static let sequential = valid.filter { Array($0)[3] != "i" }

    @Test(arguments: valid)
    func everyFileItTakesGivesTheSimplifiedAPIsPixels(name: String) throws {
        // With the file's gAMA left out, every file is read row by row (an interlaced one pass by pass) but
        // an interlaced one at 16 bits; as it is, the ones whose gamma libpng would correct (PngSuite's are
        // mostly 1.0) go to the whole-image decode.
        let original = try Fixtures.data("pngsuite", name)
        for data in [original, SyntheticPNG.removingChunks("gAMA", from: original)] {
            let whole = try decoder.decode(data, context: decodingContext(.png))
            let rows = try decoder.decodeRowByRow(data, context: decodingContext(.png))
            if let rows {
                #expect(rows.pixelSize == whole.pixelSize)
                #expect(rows.pixels == whole.pixels, "\(name)")
            }
            let isSequential = Self.sequential.contains(name)
            let hasGamma = data.range(of: Data("gAMA".utf8)) != nil
            // IHDR's bit depth, after the signature, its length and type, and the two sides.
            let isSixteenBit = data[24] == 16
            if !isSequential && isSixteenBit {
                #expect(rows == nil, "an interlaced 16-bit file must decode whole")
            } else if !hasGamma {
                #expect(rows != nil, "a file without gAMA reads row by row")
            }
        }
    }

    /// A whole decode that can be cancelled (as in a store) reads row by row where it can, and ends as the
    /// simplified API's one call does: the same bitmap or the same error, for every PngSuite file with and
    /// without its gAMA, every 7th prefix of an interlaced one, and damaged copies of it.
    @Test func aCancellableWholeDecodeEndsAsTheSimplifiedAPIDoes() throws {
        func outcome(_ data: Data, cancellable: Bool) -> Result<Bitmap, ImageDecodingError> {
            var context = decodingContext(.png)
            if cancellable { context.cancellation = DecodeCancellation() }
            return Result { () throws(ImageDecodingError) in try decoder.decode(data, context: context) }
        }
        var inputs: [Data] = []
        for name in PNGDecoderTests.valid + PNGDecoderTests.corrupt {
            let original = try Fixtures.data("pngsuite", name)
            inputs += [original, SyntheticPNG.removingChunks("gAMA", from: original)]
        }
        let interlaced = SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", "basi6a08.png"))
        var generator = SeededGenerator(seed: 853)
        inputs += stride(from: 0, to: interlaced.count, by: 7).map { interlaced.prefix($0) }
        inputs += generator.mutations(of: interlaced, count: 100, from: 8)
        var failures = 0
        for (index, data) in inputs.enumerated() {
            let reference = outcome(data, cancellable: false)
            if case .failure = reference { failures += 1 }
            #expect(outcome(data, cancellable: true) == reference, "input \(index)")
        }
        #expect(failures > 100)
    }

    @Test func theFilesItTakesAsTheyAreAreThoseWithSRGBsGamma() throws {
        var taken: [String] = []
        for name in Self.valid {
            let data = try Fixtures.data("pngsuite", name)
            if try decoder.decodeRowByRow(data, context: decodingContext(.png)) != nil { taken.append(name) }
        }
        // PngSuite gives gAMA 1.0 to nearly every file; the ones without gAMA or with 0.45 (g04) are taken.
        #expect(taken.contains("g04n2c08.png"))
        #expect(!taken.contains("g03n2c08.png"))  // gamma 0.35: libpng corrects it
        #expect(!taken.contains("g05n2c08.png"))  // gamma 0.55
        #expect(!taken.contains("basn2c08.png"))  // gamma 1.0
        #expect(taken.allSatisfy { Self.sequential.contains($0) })
    }

    @Test(arguments: [1, 3])
    func untaggedSixteenBitFilesGiveTheSimplifiedAPIsPixels(channels: Int) throws {
        let data = PNGDecoderTests.untagged(channels: channels, interlaced: false)
        let rows = try #require(try decoder.decodeRowByRow(data, context: decodingContext(.png)))
        #expect(rows.pixels == (try decoder.decode(data, context: decodingContext(.png))).pixels)
    }

    @Test(arguments: sequential)
    func resizingWhileReadingEqualsDecodingWholeThenResizing(name: String) throws {
        let data = SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", name))
        let whole = try decoder.decode(data, context: decodingContext(.png))
        for size in [
            PixelSize(width: max(1, whole.width / 2), height: max(1, whole.height / 3)),
            PixelSize(width: whole.width + 5, height: whole.height * 2),
        ] where size != whole.pixelSize {  // a 1x1 file halves to itself
            let streamed = try #require(try decoder.decode(data, context: decodingContext(.png), resizedTo: size))
            let expected = whole.resized(to: size)
            #expect(streamed.pixelSize == size)
            // A file with alpha (its colour type or a tRNS chunk) streams through the premultiplied filter;
            // decoded whole and found opaque after all, it takes the fixed-point one, which rounds differently.
            let hasAlpha = data[25] & 4 != 0 || data.range(of: Data("tRNS".utf8)) != nil
            if hasAlpha && whole.isOpaque {
                #expect(streamed.largestVisibleDifference(from: expected) <= 2, "\(name) -> \(size)")
            } else {
                #expect(streamed.pixels == expected.pixels, "\(name) -> \(size)")
            }
        }
    }

    @Test func itsOwnSizeOrAnInterlacedFileIsLeftToTheWholeImageDecode() throws {
        let sequential = try Fixtures.data("pngsuite", "g04n2c08.png")
        #expect(
            try decoder.decode(sequential, context: decodingContext(.png), resizedTo: PixelSize(width: 32, height: 32))
                == nil)
        #expect(
            try decoder.decode(sequential, context: decodingContext(.png), resizedTo: PixelSize(width: 16, height: 16))
                != nil)
        let interlaced = SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", "basi2c08.png"))
        #expect(
            try decoder.decode(interlaced, context: decodingContext(.png), resizedTo: PixelSize(width: 16, height: 16))
                == nil)
    }

    @Test(arguments: PNGDecoderTests.corrupt)
    func everyCorruptFileThrowsAPNGErrorFromTheRowReaderToo(name: String) throws {
        // Without gAMA (PngSuite's 1.0 would send the file to the whole decode) every corrupt file, all
        // of them sequential, reaches the row reader, which must refuse it as the whole decode does.
        let data = SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", name))
        let whole = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.png))
        }
        let rows = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.png), resizedTo: PixelSize(width: 7, height: 7))
                ?? Self.leftToTheWholeDecode
        }
        #expect(whole?.format == .png)
        #expect(rows?.format == .png, "\(name)")
    }

    @Test func everyPrefixOfAFileThrowsATypedErrorAndACutInTheImageDataIsTruncation() throws {
        let data = SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", "basn6a08.png"))
        let idat = try #require(data.range(of: Data("IDAT".utf8))).lowerBound
        for length in stride(from: 0, to: data.count - 12, by: 7) {
            let error = decodingError { () throws(ImageDecodingError) in
                try decoder.decode(
                    data.prefix(length), context: decodingContext(.png), resizedTo: PixelSize(width: 9, height: 9))
                    ?? Self.leftToTheWholeDecode
            }
            #expect(error?.format == .png, "prefix of \(length) bytes")
            if length > idat + 64 {
                #expect(error == ImageDecodingError(format: .png, reason: .truncated), "prefix of \(length) bytes")
            }
        }
    }

    @Test func aFilePastThePixelBudgetIsRefused() throws {
        let data = SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", "basn0g08.png"))
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(
                data, context: decodingContext(.png, pixelBudget: 1000), resizedTo: PixelSize(width: 8, height: 8))
                ?? Self.leftToTheWholeDecode
        }
        #expect(error == ImageDecodingError(format: .png, reason: .pixelBudgetExceeded(pixels: 1024, budget: 1000)))
    }
}
#endif
