#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// What the store draws, across formats and paths: orientation, sizes, corners and alpha.
@Suite("Pixels the store draws", .ownThreads)
struct DrawnPixelsTests {
    static func render(_ data: Data, width: Int?, radius: Int = 0) throws -> Bitmap {
        let folder = TemporaryDirectory("drawn-render")
        let store = try ImageStore.makeForTesting(root: folder.url)
        let header = try ImageHeader.parse(data)
        let request = ImageRequest(
            url: URL(string: "https://example.com/x")!, targetWidth: width.map { CGFloat($0) },
            cornerRadius: CGFloat(radius))
        return try store.render(OriginalImage(data: data, header: header, fileStamp: nil), for: request)
    }

    /// Landscape_6.jpg with its Exif APP1 segment moved after the frame header (SOF0), still before the
    /// scan: libjpeg, Pillow and browsers read every APP segment up to SOS. The header walk stopped at the
    /// frame header, and the picture came out sideways (300x450 where 300x200 was due).
    static func exifAfterFrameHeader() throws -> Data {
        let data = try Fixtures.data("exif-orientation", "Landscape_6.jpg")
        var bytes = [UInt8](data)
        var offset = 2
        var app1: Range<Int>?
        var sofEnd: Int?
        while bytes[offset + 1] != 0xDA {
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let segment = offset..<(offset + 2 + length)
            if bytes[offset + 1] == 0xE1, app1 == nil { app1 = segment }
            if bytes[offset + 1] == 0xC0 { sofEnd = segment.upperBound }
            offset = segment.upperBound
        }
        let exif = Array(bytes[app1!])
        // Insert after SOF first (it lies after APP1), then drop the original APP1.
        bytes.insert(contentsOf: exif, at: sofEnd!)
        bytes.removeSubrange(app1!)
        return Data(bytes)
    }

    @Test func anExifSegmentAfterTheFrameHeaderStillTurnsTheJPEG() throws {
        let moved = try Self.exifAfterFrameHeader()
        let header = try ImageHeader.parse(moved)
        #expect(header.orientation == .right, "orientation read: \(header.orientation)")
        let upright = try Self.render(try Fixtures.data("exif-orientation", "Landscape_1.jpg"), width: 300)
        let image = try Self.render(moved, width: 300)
        #expect(image.pixelSize == upright.pixelSize, "\(image.pixelSize) vs \(upright.pixelSize)")
        if image.pixelSize == upright.pixelSize {
            let psnr = image.colorPSNR(against: upright)
            #expect(psnr > 25, "PSNR against the upright picture: \(psnr) dB")
        }
    }

    /// Every orientation, Landscape and Portrait, at many widths: the size is the upright one, and the
    /// picture is the one Landscape_1 / Portrait_1 shows (orientation applied once).
    @Test(arguments: ["Landscape", "Portrait"])
    func everyOrientationComesOutUprightAtEveryWidth(kind: String) throws {
        let natural = kind == "Landscape" ? PixelSize(width: 1800, height: 1200) : PixelSize(width: 1200, height: 1800)
        let reference = try Fixtures.data("exif-orientation", "\(kind)_1.jpg")
        var failures: [String] = []
        for width in [1, 2, 3, 7, 9, 16, 75, 149, 150, 151, 225, 301, 599, 1199, 1799, 1800, 2401] {
            let upright = try Self.render(reference, width: width)
            let shown = min(width, natural.width)
            let expected = PixelSize(
                width: shown,
                height: max(1, Int((Double(natural.height) * Double(shown) / Double(natural.width)).rounded())))
            if upright.pixelSize != expected { failures.append("\(kind)_1 w=\(width): \(upright.pixelSize)") }
            for orientation in 2...8 {
                let image = try Self.render(
                    try Fixtures.data("exif-orientation", "\(kind)_\(orientation).jpg"), width: width)
                guard image.pixelSize == expected else {
                    failures.append("\(kind)_\(orientation) w=\(width): \(image.pixelSize), expected \(expected)")
                    continue
                }
                if width >= 9 {
                    let psnr = image.colorPSNR(against: upright)
                    if psnr < 22 { failures.append("\(kind)_\(orientation) w=\(width): \(psnr) dB") }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// An opaque picture with rounded corners: symmetric alpha, transparent corners, opaque midpoints
    /// (when the radius leaves a straight edge), opaque centre.
    @Test func roundedCornersAreSymmetricWithoutHoles() throws {
        var failures: [String] = []
        for (width, height) in [(7, 7), (8, 8), (9, 5), (5, 9), (2, 2), (3, 2), (1, 5), (64, 33), (33, 64), (101, 100)]
        {
            for radius in [1, 2, 3, 4, 16, 50, 10_000] {
                let opaque = Bitmap.drawing(width: width, height: height) { x, y in
                    (UInt8(x % 256), UInt8(y % 256), 9, 255)
                }
                let rounded = opaque.roundingCorners(radius: radius)
                let alpha = { (x: Int, y: Int) in rounded.pixel(x: x, y: y).alpha }
                for y in 0..<height {
                    for x in 0..<width {
                        let mirrors = [
                            alpha(width - 1 - x, y), alpha(x, height - 1 - y), alpha(width - 1 - x, height - 1 - y),
                        ]
                        if mirrors.contains(where: { $0 != alpha(x, y) }) {
                            failures.append("\(width)x\(height) r=\(radius): asymmetric at (\(x), \(y))")
                        }
                        // Colour never changes (straight alpha).
                        let p = rounded.pixel(x: x, y: y)
                        if p.red != UInt8(x % 256) || p.green != UInt8(y % 256) {
                            failures.append("\(width)x\(height) r=\(radius): colour changed at (\(x), \(y))")
                        }
                    }
                }
                let clamped = min(radius, min(width, height) / 2)
                if clamped > 0 {
                    for (x, y) in [(0, 0), (width - 1, 0), (0, height - 1), (width - 1, height - 1)]
                    where alpha(x, y) == 255 {
                        failures.append("\(width)x\(height) r=\(radius): corner (\(x), \(y)) opaque")
                    }
                }
                if width > 2, height > 2, alpha(width / 2, height / 2) != 255 {
                    failures.append("\(width)x\(height) r=\(radius): centre")
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(20))")
    }

    /// A semi-transparent gradient as PNG and as lossless WebP: the same pixels in, the same picture out.
    @Test(arguments: [nil, 160, 97, 31, 5] as [Int?])
    func aPNGAndALosslessWebPOfTheSamePixelsDrawTheSame(width: Int?) throws {
        let bitmap = Bitmap.drawing(width: 240, height: 160) { x, y in
            (UInt8(x * 255 / 239), UInt8(y * 255 / 159), UInt8((x + y) % 256), UInt8((x * 255 / 239 + 40) % 256))
        }
        let png = try ImageEncoders.PNG().encode(bitmap)
        let webp = SampleImages.webp(bitmap, quality: nil)
        let fromPNG = try Self.render(png, width: width)
        let fromWebP = try Self.render(webp, width: width)
        #expect(fromPNG.pixelSize == fromWebP.pixelSize)
        guard fromPNG.pixelSize == fromWebP.pixelSize else { return }
        var worstAlpha = 0
        var worstColour = 0
        for offset in stride(from: 0, to: fromPNG.pixels.count, by: 4) {
            worstAlpha = max(worstAlpha, abs(Int(fromPNG.pixels[offset + 3]) - Int(fromWebP.pixels[offset + 3])))
            // Colour weighted by alpha: what a viewer sees.
            let a = Int(fromPNG.pixels[offset + 3])
            let b = Int(fromWebP.pixels[offset + 3])
            for c in 0..<3 {
                let seenA = Int(fromPNG.pixels[offset + c]) * a / 255
                let seenB = Int(fromWebP.pixels[offset + c]) * b / 255
                worstColour = max(worstColour, abs(seenA - seenB))
            }
        }
        #expect(worstAlpha <= 3, "alpha differs by \(worstAlpha)")
        #expect(worstColour <= 6, "premultiplied colour differs by \(worstColour)")
    }

    /// The same PngSuite picture interlaced (basi) and not (basn), through the store as a user loads
    /// it, at its own size and scaled: the same pixels.
    @Test(arguments: [
        "0g01", "0g02", "0g04", "0g08", "0g16", "2c08", "2c16", "3p01", "3p02", "3p04", "3p08", "4a08", "4a16",
        "6a08", "6a16",
    ])
    func interlacedAndSequentialPNGsOfOnePictureDrawTheSame(kind: String) async throws {
        let folder = TemporaryDirectory("drawn-adam7")
        let store = try ImageStore.makeForTesting(root: folder.url)
        var failures: [String] = []
        for width in [nil, 31, 13, 7, 1] as [Int?] {
            let sequential = try await store.image(
                for: ImageRequest(
                    url: Fixtures.url("pngsuite", "basn\(kind).png"), targetWidth: width.map { CGFloat($0) }))
            let interlaced = try await store.image(
                for: ImageRequest(
                    url: Fixtures.url("pngsuite", "basi\(kind).png"), targetWidth: width.map { CGFloat($0) }))
            guard sequential.pixelSize == interlaced.pixelSize else {
                failures.append("w=\(String(describing: width)): \(sequential.pixelSize) vs \(interlaced.pixelSize)")
                continue
            }
            var worst = 0
            var at = 0
            for offset in sequential.pixels.indices {
                let alpha = Int(sequential.pixels[offset | 3])
                guard alpha > 0 || offset % 4 == 3 else { continue }
                let difference = abs(Int(sequential.pixels[offset]) - Int(interlaced.pixels[offset]))
                if difference > worst { (worst, at) = (difference, offset) }
            }
            if worst > 1 {
                failures.append(
                    "w=\(String(describing: width)): \(worst) levels apart at byte \(at) (pixel \(at / 4), channel \(at % 4)): \(sequential.pixels[at]) vs \(interlaced.pixels[at])"
                )
            }
        }
        #expect(failures.isEmpty, "\(kind): \(failures)")
    }

    /// The store's render with and without a cancellation (row reader / simplified API, incremental WebP)
    /// and with and without other cores: byte for byte the same image.
    @Test(arguments: [
        ("exif-orientation", "Landscape_6.jpg"), ("exif-orientation", "Portrait_7.jpg"), ("pngsuite", "basn6a16.png"),
        ("pngsuite", "basi6a08.png"), ("pngsuite", "tbrn2c08.png"), ("webp", "yellow_rose.lossy-with-alpha.webp"),
        ("gif", "triangle-001.gif"), ("jpeg", "testorig.jpg"),
    ])
    func everyRenderPathGivesTheSameBytes(folder: String, name: String) throws {
        let data = try Fixtures.data(folder, name)
        let header = try ImageHeader.parse(data)
        let temporary = TemporaryDirectory("drawn-paths")
        let store = try ImageStore.makeForTesting(root: temporary.url)
        let original = OriginalImage(data: data, header: header, fileStamp: nil)
        var failures: [String] = []
        for width in [nil, 301, 75, 33, 8, 1] as [Int?] {
            for radius in [0, 5] {
                let request = ImageRequest(
                    url: URL(string: "https://example.com/\(name)")!, targetWidth: width.map { CGFloat($0) },
                    cornerRadius: CGFloat(radius))
                let plain = try store.render(original, for: request)
                let cancellable = try store.render(original, for: request, cancellation: DecodeCancellation())
                let alone = try store.render(
                    original, for: request, cancellation: DecodeCancellation(), mayUseOtherCores: false)
                if plain != cancellable {
                    failures.append("w=\(String(describing: width)) r=\(radius): plain vs cancellable")
                }
                if cancellable != alone {
                    failures.append("w=\(String(describing: width)) r=\(radius): other cores vs alone")
                }
            }
        }
        #expect(failures.isEmpty, "\(name): \(failures)")
    }
    static let tiffOrientation6: [UInt8] = [
        0x49, 0x49, 0x2A, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0,
    ]

    /// `bitmap` as a lossless WebP in an extended (VP8X) container with an EXIF chunk saying orientation 6.
    static func webPTurned(_ bitmap: Bitmap) -> Data {
        let simple = [UInt8](SampleImages.webp(bitmap, quality: nil))
        let imageChunk = Array(simple[12...])
        var writer = ByteWriter()
        writer.ascii("VP8X")
        writer.uint32(10, bigEndian: false)
        writer.append([0x10 | 0x08, 0, 0, 0])
        writer.uint24LE(bitmap.width - 1)
        writer.uint24LE(bitmap.height - 1)
        writer.append(imageChunk)
        writer.ascii("EXIF")
        writer.uint32(tiffOrientation6.count, bigEndian: false)
        writer.append(tiffOrientation6)
        var file = ByteWriter()
        file.ascii("RIFF")
        file.uint32(writer.bytes.count + 4, bigEndian: false)
        file.ascii("WEBP")
        file.append(writer.bytes)
        return Data(file.bytes)
    }

    /// `bitmap` as a PNG with an eXIf chunk saying orientation 6 right after IHDR.
    static func pngTurned(_ bitmap: Bitmap) throws -> Data {
        var bytes = [UInt8](try ImageEncoders.PNG().encode(bitmap))
        var chunk = ByteWriter()
        chunk.uint32(tiffOrientation6.count, bigEndian: true)
        chunk.ascii("eXIf")
        chunk.append(tiffOrientation6)
        chunk.uint32(Int(CRC32.checksum(Array(chunk.bytes[4...]))), bigEndian: true)
        bytes.insert(contentsOf: chunk.bytes, at: 8 + 25)
        return Data(bytes)
    }

    /// A semi-transparent picture turned by EXIF in a WebP and a PNG, through the store: upright once,
    /// at the right size, at several widths.
    @Test func exifTurnedWebPAndPNGAreTurnedOnce() async throws {
        let stored = Bitmap.drawing(width: 90, height: 60) { x, y in
            (UInt8(x * 2), UInt8(y * 4), x < 45 ? 200 : 20, UInt8(128 + (x + y) % 128))
        }
        let upright = stored.oriented(.right)
        let folder = TemporaryDirectory("drawn-exif-formats")
        let webp = folder.url.appendingPathComponent("turned.webp")
        let png = folder.url.appendingPathComponent("turned.png")
        try Self.webPTurned(stored).write(to: webp)
        try Self.pngTurned(stored).write(to: png)
        #expect(try ImageHeader.parse(Data(contentsOf: webp)).orientation == .right)
        #expect(try ImageHeader.parse(Data(contentsOf: png)).orientation == .right)
        var failures: [String] = []
        for width in [nil, 60, 59, 31, 7, 1] as [Int?] {
            // A store per width: a wider variant in memory would serve the narrower requests as it is.
            let store = try ImageStore.makeForTesting(
                root: folder.url.appendingPathComponent("cache-\(String(describing: width))"))
            let expectedSize =
                width.map {
                    PixelSize(width: $0, height: max(1, Int((90.0 * Double($0) / 60).rounded())))
                } ?? upright.pixelSize
            let reference = width == nil ? upright : upright.resized(to: expectedSize)
            for url in [webp, png] {
                let image = try await store.image(for: ImageRequest(url: url, targetWidth: width.map { CGFloat($0) }))
                guard image.pixelSize == expectedSize else {
                    failures.append("\(url.lastPathComponent) w=\(String(describing: width)): \(image.pixelSize)")
                    continue
                }
                if (width ?? 60) >= 7 {
                    let psnr = image.alphaPSNR(against: reference)
                    if psnr < 30 {
                        failures.append("\(url.lastPathComponent) w=\(String(describing: width)): alpha \(psnr) dB")
                    }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// Fetched over HTTP, then from the disk tier by a store made again on the same folder: the same bytes.
    @Test func aRelaunchFromDiskDrawsTheSameBytes() async throws {
        let folder = TemporaryDirectory("drawn-relaunch")
        let files = folder.url.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let names = ["Landscape_6.jpg", "Portrait_8.jpg"]
        for name in names {
            try Fixtures.data("exif-orientation", name).write(to: files.appendingPathComponent(name))
        }
        try Fixtures.data("pngsuite", "basi6a08.png").write(to: files.appendingPathComponent("a.png"))
        try Fixtures.data("webp", "yellow_rose.lossy-with-alpha.webp").write(to: files.appendingPathComponent("r.webp"))
        let server = try await TestHTTPServer(serving: files)
        defer { server.stop() }
        let root = folder.url.appendingPathComponent("cache")
        var requests: [ImageRequest] = []
        for name in names + ["a.png", "r.webp"] {
            for width in [75, 301, 13] {
                requests.append(
                    ImageRequest(
                        url: server.url("/images/\(name)?w=\(width)"), targetWidth: CGFloat(width), cornerRadius: 6))
            }
        }
        var first: [Bitmap] = []
        do {
            let store = try ImageStore.makeForTesting(root: root)
            for request in requests { first.append(try await store.image(for: request)) }
            store.waitForDiskMaintenance()
        }
        let again = try ImageStore.makeForTesting(root: root)
        for (index, request) in requests.enumerated() {
            let image = try await again.image(for: request)
            #expect(image == first[index], "\(request)")
        }
        #expect(try await server.hits().values.reduce(0, +) == requests.count)
    }
    /// A white disc and line on transparent black as a WebP (lossless, and lossy with alpha), through the
    /// store at reduced widths: no visible edge pixel may turn dark. libwebp's own scaling, which the store
    /// used, weighted colour by alpha only for lossless files: the lossy one came out with grey edges
    /// (189 at alpha 58 at 97 px wide, 104 at alpha 8 at 33 px).
    @Test(arguments: [nil, 80] as [Float?])
    func aWhiteShapeOnTransparentBlackWebPGetsNoDarkFringe(quality: Float?) async throws {
        let shape = Bitmap.drawing(width: 601, height: 403) { x, y in
            let dx = Double(x) - 300.3
            let dy = Double(y) - 201.7
            let inDisc = dx * dx + dy * dy <= 140 * 140
            let onLine = (x == 40 || x == 41) && y >= 20 && y < 380
            return inDisc || onLine ? (255, 255, 255, 255) : (0, 0, 0, 0)
        }
        let folder = TemporaryDirectory("drawn-webp-fringe")
        let url = folder.url.appendingPathComponent("shape.webp")
        try SampleImages.webp(shape, quality: quality).write(to: url)
        var failures: [String] = []
        for width in [700, 97, 33, 9] {
            let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache-\(width)"))
            let image = try await store.image(for: ImageRequest(url: url, targetWidth: CGFloat(width)))
            let darkest = Self.darkestVisible(image)
            if darkest.0 < 245 { failures.append("w=\(width): darkest \(darkest)") }
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// The darkest colour sample of the pixels with alpha of at least 8, and where.
    static func darkestVisible(_ image: Bitmap) -> (UInt8, x: Int, y: Int, alpha: UInt8) {
        var result: (UInt8, x: Int, y: Int, alpha: UInt8) = (255, 0, 0, 0)
        for y in 0..<image.height {
            for x in 0..<image.width {
                let pixel = image.pixel(x: x, y: y)
                guard pixel.alpha >= 8 else { continue }
                let low = min(pixel.red, pixel.green, pixel.blue)
                if low < result.0 { result = (low, x, y, pixel.alpha) }
            }
        }
        return result
    }
}
#endif
