#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

@Suite("PNG decoder", .ownThreads)
struct PNGDecoderTests {
    static let corpus = (try? Fixtures.files(in: "pngsuite", withExtensions: ["png"])) ?? []
    /// PngSuite names its deliberately corrupt files with a leading "x".
    static let corrupt = corpus.filter { $0.hasPrefix("x") }
    static let valid = corpus.filter { !$0.hasPrefix("x") }

    let decoder = ImageDecoders.PNG()

    @Test func theSuiteHoldsItsValidAndCorruptFiles() {
        // 175 test images and the suite's logo; 14 of the test images are corrupt.
        #expect(Self.corpus.count == 176)
        #expect(Self.corrupt.count == 14)
    }

    @Test(arguments: [(1_000_001, 1), (1, 1_000_001)])
    func aSideOverLibpngsLimitIsAnUnsupportedFeatureNotDamage(width: Int, height: Int) throws {
        // A valid file (within the pixel budget) that libpng will not read: no refetch would mend it.
        let data = SyntheticPNG.sixteenBit(width: width, height: height, channels: 1, interlaced: false) { _, _, _ in 0
        }
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: width, height: height))
        let context = ImageDecodingContext(header: header)
        for decode in [
            { try decoder.decode(data, context: context) }, { try decoder.decodeRowByRow(data, context: context) },
        ] {
            let error = #expect(throws: ImageDecodingError.self) { _ = try decode() }
            #expect(error?.reason == .unsupportedFeature("a side over 1,000,000 pixels"))
            #expect(error?.reason.suggestsDamage == false)
        }
    }

    /// A gAMA chunk with a wrong CRC is discarded by libpng, so the file is read as one without it, and both
    /// readers agree. Found by scripts/fuzz (the png target stops when they differ): the gAMA 1.0 of a 16-bit
    /// gray file with its CRC damaged sent the simplified API through the 16-bit linear path, as for a gamma
    /// libpng corrects, while the row reader, which asks libpng for the gamma, read it as sRGB: a sample of 255
    /// of 65535 came out 0 from one and 1 from the other.
    @Test func aGammaChunkWithAWrongCRCIsReadAsLibpngReadsIt() throws {
        var data = SyntheticPNG.sixteenBit(
            width: 1024, height: 1, channels: 1, interlaced: false, chunks: [SyntheticPNG.gamma(1)]
        ) { x, _, _ in UInt16(x * 64 + x % 64) }
        #expect(ImageDecoders.PNG.correctsGamma(data))
        let gAMA = try #require(data.firstRange(of: Data("gAMA".utf8))).lowerBound
        data[gAMA + 8] ^= 0xFF  // the first byte of its CRC
        #expect(!ImageDecoders.PNG.correctsGamma(data))
        let context = ImageDecodingContext(header: try ImageHeader.parse(data))
        let rows = try #require(try decoder.decodeRowByRow(data, context: context))
        let whole = try decoder.decode(data, context: context)
        let differing = zip(rows.pixels, whole.pixels).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) of \(whole.pixels.count) bytes differ")
    }

    @Test(arguments: valid)
    func everyValidFileDecodesAtTheSizeInItsHeader(name: String) throws {
        let data = try Fixtures.data("pngsuite", name)
        let expected = try #require(StoredSize.png(data))
        let bitmap = try decoder.decode(data, context: decodingContext(.png))
        #expect(bitmap.pixelSize == expected)
    }

    @Test(arguments: corrupt)
    func everyCorruptFileThrowsAPNGError(name: String) throws {
        let data = try Fixtures.data("pngsuite", name)
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.png))
        }
        #expect(error?.format == .png)
    }

    @Test(arguments: [
        "0g01", "0g02", "0g04", "0g08", "0g16", "2c08", "2c16", "3p01", "3p02", "3p04", "3p08", "4a08", "4a16",
        "6a08", "6a16",
    ])
    func anAdam7InterlacedFileDecodesToTheSamePixelsAsItsProgressiveTwin(kind: String) throws {
        let interlaced = try decoder.decode(
            try Fixtures.data("pngsuite", "basi\(kind).png"), context: decodingContext(.png))
        let sequential = try decoder.decode(
            try Fixtures.data("pngsuite", "basn\(kind).png"), context: decodingContext(.png))
        #expect(interlaced.pixelSize == sequential.pixelSize)
        // 16-bit interlaced files go through the linear path (see the next test for its tolerance).
        #expect(interlaced.largestVisibleDifference(from: sequential) <= (kind.hasSuffix("16") ? 2 : 0))
    }

    @Test(arguments: [
        "basn0g16.png", "basn2c16.png", "basn4a16.png", "basn6a16.png", "tbbn2c16.png", "bggn4a16.png",
    ])
    func theSixteenBitWorkaroundAgreesWithLibpngsOwnEightBitOutput(name: String) throws {
        // libpng reduces non-interlaced 16-bit files correctly, so they check the conversion done here. Both
        // encode with libpng's power of 1/2.2; rounding through premultiplied 16-bit light leaves at most 2 of
        // 255 in visible samples (measured: 1 or 2; the piecewise sRGB curve gave up to 7, and the broken
        // interlaced path was off by up to 255).
        let data = try Fixtures.data("pngsuite", name)
        let byLibpng = try decoder.decode(data, context: decodingContext(.png), sixteenBitPath: .automatic)
        let byLinearPath = try decoder.decode(data, context: decodingContext(.png), sixteenBitPath: .linear)
        #expect(byLinearPath.largestVisibleDifference(from: byLibpng) <= 2)
    }

    /// The 8-bit level of every sample of the 9x9 test images (odd, so every Adam7 pass has a ragged edge).
    static func level(_ x: Int, _ y: Int, _ channel: Int) -> Int { (x * 29 + y * 7 + channel * 85) % 256 }

    static func untagged(channels: Int, interlaced: Bool, chunks: [(String, [UInt8])] = []) -> Data {
        SyntheticPNG.sixteenBit(width: 9, height: 9, channels: channels, interlaced: interlaced, chunks: chunks) {
            UInt16(level($0, $1, $2) * 257)
        }
    }

    @Test(arguments: [1, 3], [false, true])
    func aSixteenBitFileWithoutColourChunksIsSRGBEncodedLikeEightBitOnes(channels: Int, interlaced: Bool) throws {
        // Browsers and ImageIO read such a file as sRGB, so 257 * k is 8-bit k. libpng's simplified API
        // would take it as linear unless told otherwise, and 257 * 128 would come out as 186.
        let bitmap = try decoder.decode(
            Self.untagged(channels: channels, interlaced: interlaced), context: decodingContext(.png))
        #expect(bitmap.pixelSize == PixelSize(width: 9, height: 9))
        var largestDifference = 0
        for y in 0..<9 {
            for x in 0..<9 {
                let offset = (y * 9 + x) * 4
                #expect(bitmap.pixels[offset + 3] == 255)
                for channel in 0..<3 {
                    let expected = Self.level(x, y, channels == 1 ? 0 : channel)
                    largestDifference = max(largestDifference, abs(Int(bitmap.pixels[offset + channel]) - expected))
                }
            }
        }
        // Sequential files are reduced by libpng itself; interlaced ones go through linear light and back.
        #expect(largestDifference <= (interlaced ? 1 : 0))
    }

    @Test(arguments: [false, true])
    func aSixteenBitFileThatSaysItIsLinearIsStillReadAsLinear(interlaced: Bool) throws {
        let linear = try decoder.decode(
            Self.untagged(channels: 1, interlaced: interlaced, chunks: [SyntheticPNG.gamma(1)]),
            context: decodingContext(.png))
        let tagged = try decoder.decode(
            Self.untagged(channels: 1, interlaced: interlaced, chunks: [("sRGB", [0])]),
            context: decodingContext(.png))
        let untagged = try decoder.decode(
            Self.untagged(channels: 1, interlaced: interlaced), context: decodingContext(.png))
        // Pixel (x, 0) has level 29x mod 256; x = 5 is 145, about 28 % of the light when read as sRGB.
        #expect(Self.level(5, 0, 0) == 145)
        #expect(linear.pixels[5 * 4] > 190)
        #expect(abs(Int(tagged.pixels[5 * 4]) - 145) <= 1)
        #expect(tagged.largestVisibleDifference(from: untagged) <= 1)
    }

    @Test(arguments: [false, true])
    func aLinearSixteenBitFileKeepsItsDarkestTones(interlaced: Bool) throws {
        // Samples 0 to 504 of 65535 in linear light: 0 to 28 of 255 once encoded with libpng's power of 1/2.2,
        // every step of a dark gradient. Sequential or interlaced, a file gives the same pixels.
        let data = SyntheticPNG.sixteenBit(
            width: 64, height: 1, channels: 1, interlaced: interlaced, chunks: [SyntheticPNG.gamma(1)]
        ) { x, _, _ in UInt16(x * 8) }
        let bitmap = try decoder.decode(data, context: decodingContext(.png))
        let expected = (0..<64).map { Int((pow(Double($0 * 8) / 65535, 0.45455) * 255).rounded()) }
        let decoded = (0..<64).map { Int(bitmap.pixels[$0 * 4]) }
        #expect(zip(decoded, expected).allSatisfy { abs($0 - $1) <= 1 }, "\(decoded) vs \(expected)")
    }

    @Test func aPaletteWithTransparencyKeepsItsTransparentPixels() throws {
        let transparent = try decoder.decode(
            try Fixtures.data("pngsuite", "tbbn3p08.png"), context: decodingContext(.png))
        let opaque = try decoder.decode(
            try Fixtures.data("pngsuite", "tp0n3p08.png"), context: decodingContext(.png))
        #expect(transparent.alphaValues.contains(0))
        #expect(opaque.alphaValues.allSatisfy { $0 == 255 })
    }

    @Test func sixteenBitGrayWithAlphaBecomesEightBitGrayWithVaryingAlpha() throws {
        let bitmap = try decoder.decode(
            try Fixtures.data("pngsuite", "basn4a16.png"), context: decodingContext(.png))
        #expect(bitmap.isGray)
        #expect(Set(bitmap.alphaValues).count > 2)
    }

    @Test func aFilePastThePixelBudgetIsRefused() throws {
        // basn0g08.png is 32x32.
        let data = try Fixtures.data("pngsuite", "basn0g08.png")
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.png, pixelBudget: 1000))
        }
        #expect(error == ImageDecodingError(format: .png, reason: .pixelBudgetExceeded(pixels: 1024, budget: 1000)))
        #expect(
            try decoder.decode(data, context: decodingContext(.png, pixelBudget: 1024)).pixelSize.pixelCount == 1024
        )
    }

    @Test func everyPrefixOfAFileThrowsATypedError() throws {
        let data = try Fixtures.data("pngsuite", "basn6a08.png")
        for length in stride(from: 0, to: data.count - 12, by: 23) {
            let prefix = data.prefix(length)
            let error = decodingError { () throws(ImageDecodingError) in
                try decoder.decode(prefix, context: decodingContext(.png))
            }
            #expect(error?.format == .png, "prefix of \(length) bytes")
        }
    }

    @Test func dataCutInsideTheImageDataIsTruncated() throws {
        let data = try Fixtures.data("pngsuite", "basn6a08.png")
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data.prefix(data.count / 2), context: decodingContext(.png))
        }
        #expect(error == ImageDecodingError(format: .png, reason: .truncated))
    }

    @Test func randomBytesBehindAPNGSignatureThrowATypedError() {
        var generator = SeededGenerator(seed: 7)
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        for _ in 0..<200 {
            let data = Data(signature + generator.bytes(Int.random(in: 1...4096, using: &generator)))
            let error = decodingError { () throws(ImageDecodingError) in
                try decoder.decode(data, context: decodingContext(.png))
            }
            #expect(error?.format == .png)
        }
    }

    @Test func emptyDataThrowsTruncated() {
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(Data(), context: decodingContext(.png))
        }
        #expect(error == ImageDecodingError(format: .png, reason: .truncated))
    }

    /// The PngSuite file `name` with the zlib header of its image data claiming a window of 256 bytes
    /// (CINFO 0), shorter than the distances its data uses, and, when `fixingCRC`, the IDAT's CRC made
    /// right again: what some encoders write.
    static func claimingTooSmallAWindow(_ name: String, fixingCRC: Bool = true) throws -> Data {
        var bytes = [UInt8](try Fixtures.data("pngsuite", name))
        var offset = 8
        while !bytes[(offset + 4)..<(offset + 8)].elementsEqual("IDAT".utf8) {
            offset += bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } + 12
        }
        let length = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        #expect(bytes[offset + 8] == 0x78)  // a 32 KiB window, as zlib writes it
        bytes[offset + 8] = 0x08
        let flags = Int(bytes[offset + 9]) & 0xE0
        bytes[offset + 9] = UInt8(flags + (31 - (0x08 * 256 + flags) % 31) % 31)
        if fixingCRC {
            let crc = Int(CRC32.checksum(Array(bytes[(offset + 4)..<(offset + 8 + length)])))
            bytes.replaceSubrange(
                (offset + 8 + length)..<(offset + 12 + length),
                with: ByteWriter.build { $0.uint32(crc, bigEndian: true) })
        }
        return Data(bytes)
    }

    @Test(arguments: ["basn6a08.png", "basn2c16.png", "basi6a08.png"])
    func aZlibHeaderClaimingTooSmallAWindowIsReadWithTheLargestAsBrowsersReadIt(name: String) throws {
        // Chrome and Firefox set libpng's PNG_MAXIMUM_INFLATE_WINDOW for such files (crbug.com/807324). Before:
        // corrupt data (IDAT: invalid distance too far back), on every path.
        let data = try Self.claimingTooSmallAWindow(name)
        let original = try decoder.decode(try Fixtures.data("pngsuite", name), context: decodingContext(.png))
        let header = try ImageHeader.parse(data)
        var cancellable = ImageDecodingContext(header: header)
        cancellable.cancellation = DecodeCancellation()
        #expect(try decoder.decode(data, context: decodingContext(.png)) == original)
        #expect(try decoder.decode(data, context: cancellable) == original)
        // Row by row at display size, for the sequential files. PngSuite's files carry a gAMA, whose correction
        // only the whole decode makes (the resize then reads nothing row by row), so it is left out here, of
        // the file and of the original compared with.
        let size = PixelSize(width: 31, height: 17)
        let withoutGamma = SyntheticPNG.removingChunks("gAMA", from: data)
        let originalWithoutGamma = try decoder.decode(
            SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", name)),
            context: decodingContext(.png))
        var streaming = ImageDecodingContext(header: try ImageHeader.parse(withoutGamma))
        streaming.cancellation = DecodeCancellation()
        let resized = try decoder.decode(withoutGamma, context: streaming, resizedTo: size)
        if PNGRowReaderTests.sequential.contains(name) {
            #expect(resized == originalWithoutGamma.resized(to: size), "read row by row at display size")
        } else {
            #expect(resized == nil, "an interlaced file is decoded whole")
        }
    }

    @Test func aTooSmallWindowUnderAWrongCRCStaysCorrupt() throws {
        // The damage is not hidden by a header made right: libpng still reads the data as it is.
        let data = try Self.claimingTooSmallAWindow("basn6a08.png", fixingCRC: false)
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.png))
        }
        #expect(error == ImageDecodingError(format: .png, reason: .corrupt("IDAT: invalid distance too far back")))
    }
}
#endif
