#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// HEIF and AVIF through libheif, against the pictures the fixtures were encoded from
/// (`Fixtures/heif`, written by `scripts/make-heif-fixtures`).
@Suite("HEIF and AVIF decoder")
struct HEIFDecoderTests {
    let decoder = ImageDecoders.HEIF()

    static func source(_ name: String = "source.png") throws -> Bitmap {
        try ImageDecoders.PNG().decode(try Fixtures.data("heif", name), context: decodingContext(.png))
    }

    /// The peak signal-to-noise ratio of `image` against `reference` over the colour channels, in dB.
    static func psnr(_ image: Bitmap, _ reference: Bitmap) -> Double {
        guard image.pixelSize == reference.pixelSize else { return 0 }  // a wrong size fails the threshold
        var squares = 0.0
        for offset in stride(from: 0, to: image.pixels.count, by: 4) {
            for channel in 0..<3 {
                let difference = Double(image.pixels[offset + channel]) - Double(reference.pixels[offset + channel])
                squares += difference * difference
            }
        }
        let mean = squares / Double(image.pixels.count / 4 * 3)
        return mean == 0 ? .infinity : 10 * log10(255 * 255 / mean)
    }

    @Test(arguments: ["photo.heic", "photo.avif"])
    func aLossyFileDecodesAtItsSizeCloseToItsSource(name: String) throws {
        let data = try Fixtures.data("heif", name)
        let header = try ImageHeader.parse(data)
        #expect(header.format == (name.hasSuffix("avif") ? .avif : .heif))
        let bitmap = try decoder.decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == header.storedSize)
        #expect(bitmap.alphaValues.allSatisfy { $0 == 255 })
        // Encoded at quality 90; a wrong channel order or chroma placement scores far below 30 dB.
        let psnr = Self.psnr(bitmap, try Self.source())
        #expect(psnr > 30, "\(psnr) dB")
    }

    @Test func anAVIFWithAnAlphaPlaneKeepsItsAlpha() throws {
        let data = try Fixtures.data("heif", "alpha.avif")
        let bitmap = try decoder.decode(data, context: ImageDecodingContext(header: try ImageHeader.parse(data)))
        let source = try Self.source("source-alpha.png")
        let largestAlphaError = zip(bitmap.alphaValues, source.alphaValues).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(largestAlphaError <= 4)
        #expect(Set(bitmap.alphaValues).count > 50)
    }

    @Test func aRotatedFileDecodesStoredAndTheStoreTurnsItUpright() async throws {
        // Coded as the source, 96x64, with an irot that turns it a quarter clockwise for display.
        let data = try Fixtures.data("heif", "rotated-6.heic")
        let header = try ImageHeader.parse(data)
        #expect(header.orientation == .right)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        let stored = try decoder.decode(data, context: ImageDecodingContext(header: header))
        #expect(stored.pixelSize == header.storedSize)
        #expect(Self.psnr(stored, try Self.source()) > 30)
        // The small one first: once the full size is cached, it would serve the small request too.
        let images = try await Self.loadedThroughAStore("rotated-6.heic", widths: [32, nil])
        let (small, upright) = (images[0], images[1])
        #expect(small.pixelSize == PixelSize(width: 32, height: 48))
        #expect(upright.pixelSize == PixelSize(width: 64, height: 96))
        #expect(Self.psnr(upright, try Self.source().oriented(.right)) > 30)
    }

    /// rotated-6.heic as libheif 1.15's encoder writes it, given a quarter turn: its ispe after the turn
    /// (64x96), the picture coded before it (96x64; the fixture maker swaps the ispe back). libheif decodes
    /// and shows it as its coding says. Before, the header took the ispe (stored 64x96, shown 96x64), and
    /// the store resized the turned 64x96 picture to that: a portrait squashed into a landscape.
    @Test func aRotatedFileWhoseExtentIsWrittenAfterTheTurnComesOutAsItsPictureIsCoded() async throws {
        var bytes = [UInt8](try Fixtures.data("heif", "rotated-6.heic"))
        let ispe = Array("ispe".utf8)
        var swapped = 0
        for start in 0..<(bytes.count - 16) where Array(bytes[start..<(start + 4)]) == ispe {
            // FullBox version and flags, then width and height in 32 bits.
            let width = start + 8, height = start + 12
            guard bytes[width + 3] == 96, bytes[height + 3] == 64 else { continue }
            (bytes[width + 3], bytes[height + 3]) = (64, 96)
            swapped += 1
        }
        try #require(swapped == 1)
        let data = Data(bytes)
        let header = try ImageHeader.parse(data)
        #expect(header.orientation == .right)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            try await Self.expectRefusedAsCodedAtAnotherSize(data, named: "rotated-6-extent-turned.heic")
            return
        }
        let images = try await Self.loadedThroughAStore(data, named: "rotated-6-extent-turned.heic", widths: [nil])
        #expect(images[0].pixelSize == PixelSize(width: 64, height: 96))
        let psnr = Self.psnr(images[0], try Self.source().oriented(.right))
        #expect(psnr > 30, "\(psnr) dB")
    }

    /// The same from libheif's encoder directly: AV1 (its sequence header gives the coded size), and HEVC
    /// of odd sides, which it writes as a grid of one tile (the grid's description gives it). Before, both
    /// headers took the ispe, and the store squashed the picture as above.
    @Test(arguments: [
        ("rotated-6-extent-turned.avif", PixelSize(width: 96, height: 64)),
        ("odd-rotated-6-extent-turned.heic", PixelSize(width: 95, height: 63)),
    ])
    func aFileWrittenWithItsExtentAfterTheTurnComesOutAsItsPictureIsCoded(name: String, coded: PixelSize)
        async throws
    {
        let data = try Fixtures.data("heif", name)
        let header = try ImageHeader.parse(data)
        #expect(header.orientation == .right)
        #expect(header.storedSize == coded)
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            try await Self.expectRefusedAsCodedAtAnotherSize(data, named: name)
            return
        }
        #expect(try decoder.decode(data, context: ImageDecodingContext(header: header)).pixelSize == coded)
        let image = try await Self.loadedThroughAStore(name, widths: [nil])[0]
        #expect(image.pixelSize == coded.transposed)
        // The source's top left, as coded.
        let source = try Self.source()
        var pixels: [UInt8] = []
        for y in 0..<coded.height {
            let row = y * source.width * 4
            pixels += source.pixels[row..<(row + coded.width * 4)]
        }
        let expected = Bitmap(width: coded.width, height: coded.height, pixels: pixels)
        let psnr = Self.psnr(image, expected.oriented(.right))
        #expect(psnr > 30, "\(psnr) dB")
    }

    @Test func aThumbnailThatCoversTheSizeDecodesInsteadOfThePrimaryImage() throws {
        let data = try Fixtures.data("heif", "thumbnail.heic")  // 96x64, with a 48x32 thumbnail
        let header = try ImageHeader.parse(data)
        func decoded(covering minimumSize: PixelSize?) throws -> Bitmap {
            try decoder.decode(data, context: ImageDecodingContext(header: header, minimumSize: minimumSize))
        }
        let thumbnail = try decoded(covering: PixelSize(width: 40, height: 27))
        #expect(thumbnail.pixelSize == PixelSize(width: 48, height: 32))
        let psnr = Self.psnr(thumbnail, try Self.source().resized(to: thumbnail.pixelSize))
        #expect(psnr > 25, "\(psnr) dB")
        #expect(try decoded(covering: PixelSize(width: 48, height: 33)).pixelSize == PixelSize(width: 96, height: 64))
        #expect(try decoded(covering: nil).pixelSize == PixelSize(width: 96, height: 64))
        // A file without thumbnails decodes whole whatever the size.
        let plain = try Fixtures.data("heif", "photo.heic")
        let context = ImageDecodingContext(
            header: try ImageHeader.parse(plain), minimumSize: PixelSize(width: 8, height: 6))
        #expect(try decoder.decode(plain, context: context).pixelSize == PixelSize(width: 96, height: 64))
    }

    @Test func aRotatedFilesThumbnailComesOutUprightThroughTheStore() async throws {
        // Stored 96x64 with a 48x32 thumbnail, both turned a quarter clockwise for display.
        let data = try Fixtures.data("heif", "rotated-6-thumbnail.heic")
        let stored = try decoder.decode(
            data,
            context: ImageDecodingContext(
                header: try ImageHeader.parse(data), minimumSize: PixelSize(width: 30, height: 20)))
        #expect(stored.pixelSize == PixelSize(width: 48, height: 32))
        let upright = try await Self.loadedThroughAStore("rotated-6-thumbnail.heic", widths: [20])[0]
        #expect(upright.pixelSize == PixelSize(width: 20, height: 30))
        let expected = try Self.source().oriented(.right).resized(to: upright.pixelSize)
        let psnr = Self.psnr(upright, expected)
        #expect(psnr > 25, "\(psnr) dB")
    }

    @Test func aDisplayP3HEICIsConvertedToSRGBByTheStore() async throws {
        let tagged = try Fixtures.data("heif", "display-p3.heic")
        #expect(
            ColorProfile.embeddedICCData(in: tagged, format: .heif)
                == (try Fixtures.data("icc", "display-p3-parametric.icc")))
        #expect(ColorProfile.embeddedICCData(in: try Fixtures.data("heif", "photo.heic"), format: .heif) == nil)
        try await Self.expectConvertedFromDisplayP3("display-p3.heic", plain: "photo.heic")
    }

    /// The fixture `name` loaded through a fresh store at each width in turn (`nil`: the full size).
    static func loadedThroughAStore(_ name: String, widths: [CGFloat?]) async throws -> [Bitmap] {
        try await loadedThroughAStore(Fixtures.data("heif", name), named: name, widths: widths)
    }

    /// Loads `data`, written to a file named `name`, through a store at each of `widths`.
    static func loadedThroughAStore(_ data: Data, named name: String, widths: [CGFloat?]) async throws -> [Bitmap] {
        let folder = TemporaryDirectory("heif")
        let file = folder.url.appendingPathComponent(name)
        try data.write(to: file)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        var images: [Bitmap] = []
        for width in widths { images.append(try await store.image(for: ImageRequest(url: file, targetWidth: width))) }
        return images
    }

    /// Expects `data`, whose picture is coded at another size than its `ispe` declares, refused as libheif 1.22 and
    /// later refuse it (``HEIFLibrary/refusesAPictureOfAnotherSizeThanDeclared``): by the decoder, with libheif's
    /// words, and by a store, which fails the load with that error.
    static func expectRefusedAsCodedAtAnotherSize(_ data: Data, named name: String) async throws {
        let header = try ImageHeader.parse(data)
        let refusal = HEIFLibrary.pictureOfAnotherSizeThanDeclared(header.format)
        #expect(throws: refusal, "\(name)") {
            try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        }
        await #expect(throws: ImageLoadingError.decodingFailed(refusal), "\(name)") {
            try await loadedThroughAStore(data, named: name, widths: [nil])
        }
    }

    /// A monochrome HEIF with a gray profile (gamma 1.8) is shown converted from it, as a grayscale JPEG or
    /// PNG is; before, a HEIF's gray profile was always dropped, and the image came out as if sRGB (level
    /// 128 stayed 128 where 1.8's curve makes it about 103).
    @Test func aMonochromeImageWithAGrayProfileIsConvertedFromIt() async throws {
        let tagged = try Fixtures.data("heif", "gray-gamma-1.8.heic")
        #expect(ImageHeader.heifIsMonochrome(in: tagged))
        #expect(!ImageHeader.heifIsMonochrome(in: try Fixtures.data("heif", "photo.heic")))
        #expect(!ImageHeader.heifIsMonochrome(in: try Fixtures.data("heif", "photo.avif")))
        #expect(ColorProfile.embedded(in: tagged, format: .heif)?.isGray == true)
        let folder = TemporaryDirectory("heif-gray")
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        var images: [Bitmap] = []
        for name in ["gray-gamma-1.8.heic", "gray.heic"] {
            try Fixtures.data("heif", name).write(to: folder.url.appendingPathComponent(name))
            images.append(try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(name))))
        }
        let plain = images[1]
        let gray = stride(from: 0, to: plain.pixels.count, by: 4).allSatisfy { (offset: Int) -> Bool in
            plain.pixels[offset] == plain.pixels[offset + 1] && plain.pixels[offset] == plain.pixels[offset + 2]
        }
        #expect(gray, "the monochrome image did not decode to gray")
        let identity: [[Double]] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
        let error = ColorProfileTests.largestError(
            images[0], from: plain, decode: { pow($0, 1.8) }, matrix: identity)
        #expect(error <= 1)
        #expect(images[0] != plain)
    }

    /// Loads the fixtures `tagged` and `plain` (the same picture, the first described as Display P3)
    /// through a store and expects the first to be the second converted from Display P3, within a level.
    static func expectConvertedFromDisplayP3(_ tagged: String, plain: String) async throws {
        let folder = TemporaryDirectory("heif")
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        var images: [Bitmap] = []
        for name in [tagged, plain] {
            try Fixtures.data("heif", name).write(to: folder.url.appendingPathComponent(name))
            images.append(try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(name))))
        }
        #expect(images[0] != images[1])
        let error = ColorProfileTests.largestError(
            images[0], from: images[1], decode: ColorProfileTests.srgbDecode, matrix: ColorProfileTests.displayP3ToSRGB)
        #expect(error <= 1)
    }

    @Test func anAVIFWhoseColourDescriptionSaysDisplayP3IsConvertedAndAnUnspecifiedOneIsNot() async throws {
        let tagged = try Fixtures.data("heif", "display-p3-nclx.avif")
        let profile = try #require(ColorProfile.embedded(in: tagged, format: .avif))
        #expect(!profile.isSRGB)
        // photo.avif says "unspecified" for primaries and transfer, as encoders write for sRGB.
        #expect(ColorProfile.embedded(in: try Fixtures.data("heif", "photo.avif"), format: .avif) == nil)
        try await Self.expectConvertedFromDisplayP3("display-p3-nclx.avif", plain: "photo.avif")
    }

    @Test(arguments: ["photo.heic", "photo.avif", "alpha.avif"])
    func everyPrefixOfAFileThrowsATypedError(name: String) throws {
        let data = try Fixtures.data("heif", name)
        let format = try ImageHeader.parse(data).format
        for length in stride(from: 0, to: data.count - 1, by: 29) {
            let prefix = data.prefix(length)
            let error = decodingError { () throws(ImageDecodingError) in
                try decoder.decode(prefix, context: decodingContext(format))
            }
            #expect(error?.format == format, "prefix of \(length) bytes: \(String(describing: error))")
        }
    }

    @Test func aFilePastThePixelBudgetIsRefusedBeforeDecoding() throws {
        let data = try Fixtures.data("heif", "photo.avif")
        let error = decodingError { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.avif, pixelBudget: 1000))
        }
        #expect(error == ImageDecodingError(format: .avif, reason: .pixelBudgetExceeded(pixels: 96 * 64, budget: 1000)))
    }

    @Test(arguments: [
        "photo.heic", "photo.avif", "alpha.avif", "rotated-6.heic", "display-p3.heic", "display-p3-nclx.avif",
        "thumbnail.heic", "rotated-6-thumbnail.heic", "overlay.heic", "grid.heic",
    ])
    func theCodedSizeIsReadFromTheCodecStreamWithoutDecoding(name: String) throws {
        // HEVC from the sequence parameter set in hvcC (the thumbnail's grid tiles are 64x64, smaller);
        // AV1 from the sequence header at the start of the item's data (libheif writes none in av1C).
        let coded = try #require(HEIFCodedSize.largest(in: try Fixtures.data("heif", name)))
        #expect(coded == PixelSize(width: 96, height: 64))
    }

    @Test(arguments: [
        ("declares-64-codes-4096.heic", PixelSize(width: 64, height: 64), PixelSize(width: 4096, height: 4096)),
        ("declares-64-codes-4096.avif", PixelSize(width: 64, height: 64), PixelSize(width: 4096, height: 4096)),
        // An overlay canvas, which libheif allocates whole; the second file has the overlay's
        // description in two extents, which libheif joins.
        (
            "overlay-declares-96-canvas-8192.heic", PixelSize(width: 96, height: 64),
            PixelSize(width: 8192, height: 8192)
        ),
        (
            "overlay-split-declares-96-canvas-8192.heic", PixelSize(width: 96, height: 64),
            PixelSize(width: 8192, height: 8192)
        ),
    ])
    func aFileThatMakesLibheifAllocateMoreThanItDeclaresIsRefusedBeforeDecoding(
        name: String, declared: PixelSize, allocated: PixelSize
    ) throws {
        let data = try Fixtures.data("heif", name)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == declared)
        #expect(HEIFCodedSize.largest(in: data) == allocated)
        try Self.expectRefusedBeforeDecoding(data, header: header, pixels: allocated.pixelCount)
    }

    @Test(arguments: ["declares-64-codes-4096.heic", "declares-64-codes-4096.avif"])
    func withinTheBudgetAFileThatCodesMoreThanItDeclaresDecodesAtItsCodedSize(name: String) throws {
        let data = try Fixtures.data("heif", name)
        let header = try ImageHeader.parse(data)
        if HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            #expect(throws: Self.codedFarLargerThanDeclared(header.format)) {
                try decoder.decode(data, context: ImageDecodingContext(header: header))
            }
            return
        }
        #expect(
            try decoder.decode(data, context: ImageDecodingContext(header: header)).pixelSize
                == PixelSize(width: 4096, height: 4096))
    }

    /// What libheif 1.22 and later make of declares-64-codes-4096.heic and .avif (coded 4096x4096, declared 64x64):
    /// refused before decoding as past a security limit of 16 times the declared size from 1.23.5
    /// (``HEIFLibrary/limitsTheCodedPictureToTheDeclaredSize``), for its size once decoded before.
    static func codedFarLargerThanDeclared(_ format: ImageFormat) -> ImageDecodingError {
        guard HEIFLibrary.limitsTheCodedPictureToTheDeclaredSize else {
            return HEIFLibrary.pictureOfAnotherSizeThanDeclared(format)
        }
        let limit = "Security limit exceeded: Image size 4096x4096 exceeds the maximum image size 65536"
        return ImageDecodingError(format: format, reason: .corrupt("Memory allocation error: \(limit)"))
    }

    @Test func aGridWhoseCanvasIsLargerThanDeclaredIsRefusedBeforeDecoding() throws {
        // thumbnail.heic's thumbnail is a grid (its one tile 64x64, its canvas 48x32), described in idat:
        // version, flags, rows - 1, columns - 1, then the canvas as two 16-bit numbers.
        var bytes = [UInt8](try Fixtures.data("heif", "thumbnail.heic"))
        let idat = try #require(Data(bytes).range(of: Data("idat".utf8))).upperBound
        #expect(Array(bytes[(idat + 4)..<(idat + 8)]) == [0, 48, 0, 32])
        bytes.replaceSubrange((idat + 4)..<(idat + 8), with: [0x20, 0x00, 0x20, 0x00])  // 8192x8192
        let data = Data(bytes)
        let header = try ImageHeader.parse(data)
        #expect(HEIFCodedSize.largest(in: data) == PixelSize(width: 8192, height: 8192))
        try Self.expectRefusedBeforeDecoding(data, header: header, pixels: 8192 * 8192)
    }

    @Test(arguments: ["grid.heic", "overlay.heic"])
    func aDerivedImageDecodesFromItsInputs(name: String) async throws {
        // grid.heic: the picture's four quadrants, coded apart, as a 2x2 grid. overlay.heic: the photo's
        // coded picture as the one image of an overlay (iovl) of its own size.
        let data = try Fixtures.data("heif", name)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        // grid.heic's tiles are coded 64x64 under an ispe of 48x32 (see Fixtures/heif/README.txt).
        if name == "grid.heic", HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            try await Self.expectRefusedAsCodedAtAnotherSize(data, named: name)
            return
        }
        let bitmap = try decoder.decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == PixelSize(width: 96, height: 64))
        let psnr = Self.psnr(bitmap, try Self.source())
        #expect(psnr > 30, "\(psnr) dB")
        #expect(try await Self.loadedThroughAStore(name, widths: [nil])[0] == bitmap)
    }

    /// `name` with the bytes of `find` replaced, at its first place after `skipping` bytes, by `replacement`.
    static func fixture(_ name: String, replacing find: [UInt8], after skipping: Int = 0, with replacement: [UInt8])
        throws -> Data
    {
        var bytes = [UInt8](try Fixtures.data("heif", name))
        let start = try #require(Data(bytes).range(of: Data(find), in: skipping..<bytes.count)).lowerBound
        bytes.replaceSubrange(start..<(start + find.count), with: replacement)
        return Data(bytes)
    }

    /// Expects `data` refused as corrupt for a reason starting with `reason` by the decoder and by the
    /// colour readers, which open it with libheif too, rather than aborting or hanging in libheif.
    static func expectRefusedBeforeLibheif(_ data: Data, reason: String) throws {
        let header = try ImageHeader.parse(data)
        let error = decodingError { () throws(ImageDecodingError) in
            try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        }
        #expect(error?.format == header.format)
        guard case .corrupt(let message)? = error?.reason else {
            Issue.record("not refused as corrupt: \(String(describing: error))")
            return
        }
        #expect(message.hasPrefix(reason), "\(message)")
        #expect(ImageDecoders.HEIF.colorProfile(in: data, format: header.format) == nil)
        #expect(ImageDecoders.HEIF.iccProfile(in: data, format: header.format) == nil)
    }

    @Test func anOverlayOfAnItemThatIsNotAnImageIsRefusedBeforeLibheifAbortsOnIt() throws {
        // The overlay's input typed as EXIF metadata: libheif 1.15 fails an assertion and aborts.
        let data = try Self.fixture("overlay.heic", replacing: Array("hvc1".utf8), with: Array("Exif".utf8))
        try Self.expectRefusedBeforeLibheif(data, reason: "derived image 2 is made from item 1, which is not an image")
        // What the fuzzer found: the input's infe box damaged, so the file declares no item 1.
        let found = try Fixtures.data("fuzz-regressions", "heif-overlay-of-a-missing-item.heic")
        try Self.expectRefusedBeforeLibheif(found, reason: "derived image 2 is made from item 1, which is not an image")
        // Found next: the same, with the reference box's size past its parent's end, which libheif reads anyway.
        let foundNext = try Fixtures.data("fuzz-regressions", "heif-overlay-of-a-missing-item-bad-reference-box.heic")
        try Self.expectRefusedBeforeLibheif(foundNext, reason: "its items cannot be read")
    }

    @Test func aGridMadeFromItselfIsRefusedBeforeLibheifHangsOnIt() throws {
        // The grid (item 5) listing itself as its last tile: libheif 1.15 never returns from reading it.
        let data = try Self.fixture(
            "grid.heic", replacing: [0, 5, 0, 4, 0, 1, 0, 2, 0, 3, 0, 4], with: [0, 5, 0, 4, 0, 1, 0, 2, 0, 3, 0, 5])
        try Self.expectRefusedBeforeLibheif(data, reason: "image 5 is made, through its inputs or alpha, from itself")
        // The sound grid passes the same check.
        #expect(HEIFDerivations.problem(in: try Fixtures.data("heif", "grid.heic")) == nil)
    }

    @Test(arguments: [
        ("item-declared-twice", "its items cannot be read"),
        ("reference-hidden-in-another", "its items cannot be read"),
        ("two-meta-boxes", "the file has 2 meta boxes"),
        ("alpha-of-each-other", "image 1 is made, through its inputs or alpha, from itself"),
        ("alpha-made-from-its-image", "image 1 is made, through its inputs or alpha, from itself"),
        ("overlays-doubling-40-times", "image 30 would decode more than 4096 images"),
    ])
    func referencesThatCrashOrHangLibheifAreRefusedBeforeIt(name: String, reason: String) throws {
        // Written by scripts/make-heif-hostile.py; each aborts, overflows the stack in or hangs libheif 1.15.
        let data = try Fixtures.data("heif/hostile", "\(name).heic")
        try Self.expectRefusedBeforeLibheif(data, reason: reason)
    }

    @Test func everySoundFixturePassesTheReferenceCheck() throws {
        // Grids, overlays, thumbnails (thmb), alpha planes (auxl), rotations, apertures: none is refused.
        let names = try Fixtures.files(in: "heif", withExtensions: ["heic", "avif"])
        #expect(names.count >= 20)
        for name in names {
            #expect(HEIFDerivations.problem(in: try Fixtures.data("heif", name)) == nil, "\(name)")
        }
    }

    /// Expects `data` refused for its `pixels` against a budget of a million, before libheif runs: cut
    /// short by 40 bytes, which libheif would report as damage, it is refused all the same.
    static func expectRefusedBeforeDecoding(_ data: Data, header: ImageHeader, pixels: Int) throws {
        let budget = 1_000_000
        for input in [data, data.prefix(data.count - 40)] {
            let error = decodingError { () throws(ImageDecodingError) in
                try ImageDecoders.HEIF().decode(
                    input, context: ImageDecodingContext(header: header, pixelBudget: budget))
            }
            #expect(
                error
                    == ImageDecodingError(
                        format: header.format, reason: .pixelBudgetExceeded(pixels: pixels, budget: budget)),
                "\(input.count) of \(data.count) bytes")
        }
    }

    @Test func damagedCodecStreamsGiveNoCodedSizeRatherThanAWrongOne() throws {
        var generator = SeededGenerator(seed: 9)
        var sized = 0
        for damaged in generator.mutations(of: try Fixtures.data("heif", "photo.heic"), count: 300, from: 0) {
            for length in [damaged.count, damaged.count / 2, 40] {
                if let size = HEIFCodedSize.largest(in: damaged.prefix(length)) {
                    #expect(size.width > 0 && size.height > 0)
                    sized += 1
                }
            }
        }
        // Damage that misses the parameter set leaves the size readable: the check above ran.
        #expect(sized > 0)
    }

    @Test func randomBytesAfterAnAVIFHeaderThrowATypedError() throws {
        var generator = SeededGenerator(seed: 5)
        for damaged in generator.mutations(of: try Fixtures.data("heif", "photo.avif"), count: 100, from: 40) {
            // Damage may land where nothing checks it; what must never happen is a crash or a wrong size.
            do {
                let bitmap = try decoder.decode(damaged, context: decodingContext(.avif))
                #expect(bitmap.pixelSize.pixelCount <= 96 * 64 * 4)
            } catch {
                #expect(error.format == .avif)
            }
        }
    }
}
#endif
