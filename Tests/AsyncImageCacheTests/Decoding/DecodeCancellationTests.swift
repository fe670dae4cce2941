import Foundation
import Testing

@testable import AsyncImageCache

/// The built-in decoders and the resize stop with `.cancelled` once the decode's cancellation is raised,
/// and decode as before while it is not.
@Suite(.ownThreads) struct DecodeCancellationTests {
    /// A context for `data` with a cancellation, raised or not.
    private func context(
        _ data: Data, minimumSize: PixelSize? = nil, raised: Bool
    ) throws -> ImageDecodingContext {
        var context = ImageDecodingContext(header: try ImageHeader.parse(data), minimumSize: minimumSize)
        let cancellation = DecodeCancellation()
        if raised { cancellation.cancel() }
        context.cancellation = cancellation
        return context
    }

    private func expectCancelled(
        _ format: ImageFormat, sourceLocation: SourceLocation = #_sourceLocation,
        _ decode: () throws(ImageDecodingError) -> Bitmap?
    ) {
        #expect(
            throws: ImageDecodingError(format: format, reason: .cancelled), sourceLocation: sourceLocation,
            performing: { _ = try decode() })
    }

    /// Full size (libjpeg row by row), 1/8 (the DC-only decoder, on one thread and on two), a progressive
    /// file (whose scans libjpeg reads before the first row), and the streaming resize.
    @Test func aRaisedCancellationStopsEveryJPEGPath() throws {
        let baseline = try SampleImages.jpeg(width: 1600, height: 1200)
        let progressive = try Fixtures.data("jpeg", "video-001.progressive.jpeg")
        let decoder = ImageDecoders.JPEG()
        expectCancelled(.jpeg) { () throws(ImageDecodingError) in
            try decoder.decode(baseline, context: try! context(baseline, raised: true))
        }
        let small = PixelSize(width: 150, height: 100)
        expectCancelled(.jpeg) { () throws(ImageDecodingError) in
            try decoder.decode(baseline, context: try! context(baseline, minimumSize: small, raised: true))
        }
        expectCancelled(.jpeg) { () throws(ImageDecodingError) in
            try decoder.decode(progressive, context: try! context(progressive, raised: true))
        }
        for overlapping in [false, true] {
            expectCancelled(.jpeg) { () throws(ImageDecodingError) in
                try decoder.decode(
                    baseline, context: try! context(baseline, raised: true),
                    resizedTo: PixelSize(width: 500, height: 375), overlapping: overlapping)
            }
            expectCancelled(.jpeg) { () throws(ImageDecodingError) in
                try decoder.decode(
                    baseline, context: try! context(baseline, minimumSize: small, raised: true), resizedTo: small,
                    overlapping: overlapping)
            }
        }
    }

    @Test func aJPEGDecodeWithACancellationNotRaisedGivesTheSamePixels() throws {
        let data = try SampleImages.jpeg(width: 1600, height: 1200)
        let decoder = ImageDecoders.JPEG()
        for minimumSize in [nil, PixelSize(width: 150, height: 100), PixelSize(width: 500, height: 375)] {
            let plain = try decoder.decode(
                data, context: ImageDecodingContext(header: try ImageHeader.parse(data), minimumSize: minimumSize))
            let watched = try decoder.decode(data, context: try context(data, minimumSize: minimumSize, raised: false))
            #expect(plain == watched)
        }
    }

    @Test func aRaisedCancellationStopsThePNGDecodes() throws {
        let data = try SampleImages.png(width: 400, height: 300)
        let decoder = ImageDecoders.PNG()
        expectCancelled(.png) { () throws(ImageDecodingError) in
            try decoder.decode(
                data, context: try! context(data, raised: true), resizedTo: PixelSize(width: 100, height: 75))
        }
        expectCancelled(.png) { () throws(ImageDecodingError) in
            try decoder.decode(data, context: try! context(data, raised: true))
        }
        let plain = try decoder.decode(
            data, context: ImageDecodingContext(header: try ImageHeader.parse(data)),
            resizedTo: PixelSize(width: 100, height: 75))
        let watched = try decoder.decode(
            data, context: try context(data, raised: false), resizedTo: PixelSize(width: 100, height: 75))
        #expect(plain != nil && plain == watched)
    }

    /// giflib hands out the rows one by one: the decoder reads the flag every few of them.
    @Test func aRaisedCancellationStopsTheGIFDecode() throws {
        let indices = (0..<(200 * 150)).map { UInt8($0 % 2) }
        let frame = SyntheticGIF.Frame(width: 200, height: 150, indices: indices)
        let data = SyntheticGIF.make(
            width: 200, height: 150, globalColors: [(0, 0, 0), (250, 10, 10)], frames: [frame])
        let decoder = ImageDecoders.GIF()
        expectCancelled(.gif) { () throws(ImageDecodingError) in
            try decoder.decode(data, context: try! context(data, raised: true))
        }
        let plain = try decoder.decode(data, context: ImageDecodingContext(header: try ImageHeader.parse(data)))
        #expect(try decoder.decode(data, context: try context(data, raised: false)) == plain)
    }

    /// Records the rows a decode reports and raises its cancellation at the first report: a flag raised part
    /// way through the decode, at a point the decoder chose, without timing.
    final class RaisingAtFirstReport: @unchecked Sendable {
        // `reports` is only touched while holding `lock`; `cancellation` is set before the decode starts.
        private let lock = NSLock()
        private var reports: [(rows: Int, total: Int)] = []
        weak var cancellation: DecodeCancellation?

        /// Every report so far: the rows decoded, and the rows in all.
        var rowsReported: [(rows: Int, total: Int)] { lock.withLock { reports } }

        func observe(_ rows: Int, _ total: Int) {
            lock.withLock { reports.append((rows, total)) }
            cancellation?.cancel()
        }
    }

    /// A context for `data` whose cancellation `recorder` raises at the decoder's first report.
    private func context(_ data: Data, minimumSize: PixelSize? = nil, raisedBy recorder: RaisingAtFirstReport) throws
        -> ImageDecodingContext
    {
        var context = ImageDecodingContext(header: try ImageHeader.parse(data), minimumSize: minimumSize)
        let cancellation = DecodeCancellation(rowObserver: recorder.observe)
        recorder.cancellation = cancellation
        context.cancellation = cancellation
        return context
    }

    /// Lossy, lossless, lossy with alpha, scaled, and the first frame of an animation: a raised flag stops the
    /// decode before libwebp is handed its first chunk.
    @Test(arguments: [
        "yellow_rose.lossy.webp", "yellow_rose.lossless.webp", "yellow_rose.lossy-with-alpha.webp", "anim.webp",
    ])
    func aRaisedCancellationStopsTheWebPDecode(name: String) throws {
        let data = try Fixtures.data("webp", name)
        for minimumSize in [nil, PixelSize(width: 50, height: 40)] {
            expectCancelled(.webp) { () throws(ImageDecodingError) in
                try ImageDecoders.WebP().decode(
                    data, context: try! context(data, minimumSize: minimumSize, raised: true))
            }
        }
    }

    /// Raised part way (at the first rows reported, after a chunk of the file), a 1500x1000 WebP decode stops
    /// at the next chunk, short of its last row; lossy and lossless.
    @Test(arguments: [80, nil] as [Float?])
    func aWebPDecodeStopsAtTheChunkAfterTheFlagIsRaised(quality: Float?) throws {
        let data = SampleImages.webp(SampleImages.detailed(width: 1500, height: 1000), quality: quality)
        let recorder = RaisingAtFirstReport()
        let context = try context(data, raisedBy: recorder)
        expectCancelled(.webp) { () throws(ImageDecodingError) in
            try ImageDecoders.WebP().decode(data, context: context)
        }
        let reports = recorder.rowsReported
        #expect(reports.count == 1, "\(data.count) bytes, reported \(reports)")
        #expect(reports.allSatisfy { $0.rows < $0.total && $0.total == 1000 }, "\(reports)")
    }

    /// Decoded whole (asked for its own size, or interlaced), a PNG stops at the batch of rows after the flag is
    /// raised: a 1200x800 sequential file, and an Adam7 one, whose seven passes each go over its 32 rows.
    @Test func aWholePNGDecodeStopsAtTheRowsAfterTheFlagIsRaised() throws {
        let sequential = try ImageEncoders.PNG().encode(
            SampleImages.gradient(width: 300, height: 200).resized(to: PixelSize(width: 1200, height: 800)))
        let interlaced = SyntheticPNG.removingChunks("gAMA", from: try Fixtures.data("pngsuite", "basi6a08.png"))
        try expectWholePNGDecodeStopsAfterTheFirstReport(sequential, totalRows: 800)
        try expectWholePNGDecodeStopsAfterTheFirstReport(interlaced, totalRows: 7 * 32)
    }

    /// Decodes the PNG `data` whole with the flag raised at the first rows reported, and expects `.cancelled`
    /// after that one report, short of the `totalRows` the decode reads.
    private func expectWholePNGDecodeStopsAfterTheFirstReport(
        _ data: Data, totalRows: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let recorder = RaisingAtFirstReport()
        let context = try context(data, raisedBy: recorder)
        expectCancelled(.png, sourceLocation: sourceLocation) { () throws(ImageDecodingError) in
            try ImageDecoders.PNG().decode(data, context: context)
        }
        let reports = recorder.rowsReported
        #expect(reports.count == 1, "reported \(reports)", sourceLocation: sourceLocation)
        #expect(
            reports.allSatisfy { $0.rows < $0.total && $0.total == totalRows }, "\(reports)",
            sourceLocation: sourceLocation)
    }

    /// A 16-bit Adam7 file and one whose gamma libpng corrects, which decode whole through the 16-bit linear
    /// path, stop at the batch of rows after the flag is raised. Before: that path read the image in one call
    /// and never looked at the flag; each decode gave its bitmap, reporting no rows.
    @Test(arguments: [false, true])
    func aSixteenBitPNGDecodeThroughTheLinearPathStopsAtTheRowsAfterTheFlagIsRaised(interlaced: Bool) throws {
        let data = SyntheticPNG.sixteenBit(
            width: 64, height: 64, channels: 3, interlaced: interlaced,
            chunks: interlaced ? [] : [SyntheticPNG.gamma(1)]
        ) { x, y, channel in UInt16((x * 1000 + y * 17 + channel * 5000) % 65536) }
        try expectWholePNGDecodeStopsAfterTheFirstReport(data, totalRows: (interlaced ? 7 : 1) * 64)
    }

    /// Large enough to be split between lanes, so every lane sees the flag.
    @Test func aRaisedCancellationStopsTheResize() {
        let bitmap = SampleImages.gradient(width: 1200, height: 900)
        let size = PixelSize(width: 300, height: 225)
        let raised = DecodeCancellation()
        raised.cancel()
        #expect(bitmap.resized(to: size, sourceExtent: nil, cancellation: raised) == nil)
        #expect(
            bitmap.resized(to: size, sourceExtent: nil, cancellation: DecodeCancellation()) == bitmap.resized(to: size))
    }
}
