import Foundation
import Testing

@testable import AsyncImageCache

/// The three ways a resize runs (whole image in memory, overlapping a producer on another thread,
/// streaming through a ring of rows) do the same arithmetic, so they must agree to the byte.
@Suite(.ownThreads) struct RowResamplerRunningTests {
    /// Shrinks, slight shrinks, enlargements (exactly 2x puts Lanczos zeros on taps, so trimmed
    /// windows can start a row early), one row, and a ring as tall as the image.
    static let cases: [(PixelSize, PixelSize)] = [
        (PixelSize(width: 120, height: 80), PixelSize(width: 95, height: 63)),
        (PixelSize(width: 200, height: 150), PixelSize(width: 40, height: 30)),
        (PixelSize(width: 33, height: 21), PixelSize(width: 66, height: 42)),
        (PixelSize(width: 17, height: 9), PixelSize(width: 50, height: 31)),
        (PixelSize(width: 64, height: 1), PixelSize(width: 20, height: 1)),
        (PixelSize(width: 9, height: 300), PixelSize(width: 5, height: 7)),
        (PixelSize(width: 40, height: 12), PixelSize(width: 30, height: 11)),
    ]

    @Test(arguments: 0..<cases.count, [true, false])
    func producedRowsGiveTheSameBytesAsAWholeImageResize(index: Int, isOpaque: Bool) throws {
        let (sourceSize, targetSize) = Self.cases[index]
        var card = ResizeTests.testCard(width: sourceSize.width, height: sourceSize.height)
        if isOpaque { card = card.withOpaqueAlpha() }
        let expected = card.resized(to: targetSize)
        let resampler = RowResampler(sourceSize: sourceSize, targetSize: targetSize, isOpaque: isOpaque)
        for overlapping in [true, false] {
            var calls = 0
            let pixels = resampler.run(overlapping: overlapping) { rows, first, limit in
                // Rows from the card in uneven batches, full ones among them.
                let count = min([3, 8, 1, 5][calls % 4], limit)
                calls += 1
                card.pixels.withUnsafeBytes { bytes in
                    rows.update(
                        from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + first * card.bytesPerRow,
                        count: count * card.bytesPerRow)
                }
                return count
            }
            let same = pixels == expected.pixels
            #expect(same, "overlapping: \(overlapping)")
        }
    }

    @Test func aWholeImageResizeOnTheCallingThreadAloneGivesTheSameBytesAsOneSplitIntoLanes() {
        // Large enough that the split one runs in several lanes (a million multiply-adds a pass).
        let card = ResizeTests.testCard(width: 1200, height: 900)
        let size = PixelSize(width: 300, height: 225)
        let split = card.resized(to: size, sourceExtent: nil, cancellation: nil, usesOtherThreads: true)
        let alone = card.resized(to: size, sourceExtent: nil, cancellation: nil, usesOtherThreads: false)
        #expect(alone?.pixelSize == size)
        #expect(alone?.pixels == split?.pixels)
    }

    @Test(arguments: [true, false])
    func aProducerThatFailsStopsTheResizeWithNothing(overlapping: Bool) {
        let card = ResizeTests.testCard(width: 50, height: 40)
        let resampler = RowResampler(
            sourceSize: card.pixelSize, targetSize: PixelSize(width: 20, height: 16), isOpaque: false)
        var failures = 0
        let pixels = resampler.run(overlapping: overlapping) { rows, first, limit in
            #expect(failures == 0, "called again after it failed")
            guard first < 10 else {
                failures += 1
                return nil
            }
            rows.update(repeating: 128, count: min(limit, 2) * card.bytesPerRow)
            return min(limit, 2)
        }
        #expect(pixels == nil)
        #expect(failures == 1)
    }

    @Test(arguments: [
        "testorig.jpg", "video-001.q50.420.jpeg", "video-001.progressive.jpeg", "testimgari.jpg",
        "video-001.q50.444.jpeg",
    ])
    func aJPEGResizedWhileItDecodesMatchesDecodeThenResize(name: String) throws {
        let data = try Fixtures.data("jpeg", name)
        let header = try ImageHeader.parse(data)
        let target = PixelSize(width: header.storedSize.width * 3 / 10, height: header.storedSize.height * 3 / 10)
        let context = ImageDecodingContext(header: header, minimumSize: target)
        // The decode at n/8 spans side * n / 8 of its pixels (its last column and row are partial blocks).
        let numerator = ImageDecoders.JPEG.scaleNumerator(imageSize: header.storedSize, covering: target)
        let extent = SIMD2(Double(header.storedSize.width), Double(header.storedSize.height)) * Double(numerator) / 8
        let expected = try ImageDecoders.JPEG().decode(data, context: context).resized(to: target, sourceExtent: extent)
        for overlapping in [true, false] {
            let resized = try ImageDecoders.JPEG().decode(
                data, context: context, resizedTo: target, overlapping: overlapping)
            let same = resized == expected
            #expect(same, "overlapping: \(overlapping)")
        }
    }

    @Test(arguments: ["video-001.q50.420.truncated-half.jpeg", "video-001.progressive.truncated-half.jpeg"])
    func aTruncatedJPEGFailsTheSameWayEitherWay(name: String) throws {
        let data = try Fixtures.data("jpeg", name)
        let header = try ImageHeader.parse(data)
        let target = PixelSize(width: header.storedSize.width / 3, height: header.storedSize.height / 3)
        let context = ImageDecodingContext(header: header, minimumSize: target)
        for overlapping in [true, false] {
            let error = decodingError { () throws(ImageDecodingError) in
                try ImageDecoders.JPEG().decode(data, context: context, resizedTo: target, overlapping: overlapping)
            }
            #expect(error == ImageDecodingError(format: .jpeg, reason: .truncated), "overlapping: \(overlapping)")
        }
    }
}

extension RowResampler {
    fileprivate func run(
        overlapping: Bool, _ produce: (UnsafeMutablePointer<UInt8>, Int, Int) -> Int?
    ) -> [UInt8]? {
        overlapping ? resample(producingRowsWith: produce) : resample(streamingRowsWith: produce)
    }
}

extension Bitmap {
    /// The same picture with every pixel opaque.
    func withOpaqueAlpha() -> Bitmap {
        var pixels = self.pixels
        for index in stride(from: 3, to: pixels.count, by: 4) { pixels[index] = 255 }
        return Bitmap(width: width, height: height, pixels: pixels)
    }
}
