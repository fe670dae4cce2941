import CResample
import Foundation
import Testing

@testable import AsyncImageCache

/// Opaque images resize in fixed point through the C kernels of `CResample`, which pick plain C,
/// SSE2 or AVX2 at run time. Every level must give the same bytes, and the result must stay close
/// to exact arithmetic.
///
/// Serialized: the level is a process-wide setting, and the test that changes it restores it.
@Suite(.serialized) struct FixedPointResizeTests {
    /// An opaque card with detail at every scale, and noise with full-range jumps so that Lanczos's
    /// negative lobes overshoot and the kernels must clamp.
    static func opaqueCard(width: Int, height: Int, seed: UInt64) -> Bitmap {
        var state = seed
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let noise = UInt8(truncatingIfNeeded: state >> 56)
                let wave = UInt8(127.5 + 127.5 * sin(Double(x) * 0.3 + Double(y) * 0.11))
                let edge: UInt8 = (x / 3 + y / 2) % 2 == 0 ? 0 : 255
                pixels += [wave, noise, edge, 255]
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// Shrinks by little and by much (many taps), enlargements, sources narrower than the four taps
    /// the vector row kernels read at once, and widths that leave a tail after the column kernels'
    /// 16- and 8-byte steps.
    static let cases: [(PixelSize, PixelSize)] = [
        (PixelSize(width: 1200, height: 80), PixelSize(width: 954, height: 64)),
        (PixelSize(width: 301, height: 217), PixelSize(width: 37, height: 23)),
        (PixelSize(width: 640, height: 40), PixelSize(width: 9, height: 3)),
        (PixelSize(width: 31, height: 19), PixelSize(width: 77, height: 45)),
        (PixelSize(width: 3, height: 2), PixelSize(width: 7, height: 5)),
        (PixelSize(width: 2, height: 50), PixelSize(width: 1, height: 13)),
        (PixelSize(width: 129, height: 5), PixelSize(width: 130, height: 6)),
        (PixelSize(width: 50, height: 50), PixelSize(width: 25, height: 25)),
    ]

    @Test func everyInstructionLevelGivesTheSameBytes() {
        let best = cresample_set_level(2)
        defer { cresample_set_level(2) }
        #if arch(x86_64)
        // SSE2 is part of x86-64, so at least two levels are compared here, and opaque images take
        // the fixed-point kernels. (Elsewhere they take the Float passes, and this compares nothing.)
        #expect(best >= 1)
        let resampler = RowResampler(
            sourceSize: PixelSize(width: 9, height: 9), targetSize: PixelSize(width: 4, height: 4), isOpaque: true)
        #expect(resampler.fixedPoint != nil)
        #endif
        for (index, (source, target)) in Self.cases.enumerated() {
            let card = Self.opaqueCard(width: source.width, height: source.height, seed: UInt64(index + 1))
            #expect(card.isOpaque)
            var results: [Int: Bitmap] = [:]
            for level in stride(from: best, through: 0, by: -1) {
                #expect(cresample_set_level(Int32(level)) == level)
                results[Int(level)] = card.resized(to: target)
            }
            cresample_set_level(2)
            let plain = results[0]!
            #expect(plain.pixelSize == target)
            for level in 1..<(Int(best) + 1) {
                let same = results[level]!.pixels == plain.pixels
                #expect(same, "\(source) -> \(target): level \(level) differs from plain C")
            }
            // An opaque image stays exactly opaque: each weight group sums to one in fixed point.
            #expect(stride(from: 3, to: plain.pixels.count, by: 4).allSatisfy { plain.pixels[$0] == 255 })
        }
    }

    @Test(arguments: [
        PixelSize(width: 31, height: 20), PixelSize(width: 17, height: 41), PixelSize(width: 150, height: 90),
    ])
    func opaqueResultMatchesADoublePrecisionReference(size: PixelSize) {
        let card = ResizeTests.testCard(width: 97, height: 61).withOpaqueAlpha()
        let psnr = ReferenceLanczos.psnr(card.resized(to: size), ReferenceLanczos.resize(card, to: size))
        #expect(psnr >= 40, "PSNR \(psnr) dB")
    }

    @Test func aConstantOpaqueColourStaysExactlyThatColour() {
        let color: [UInt8] = [201, 3, 128, 255]
        let flat = ResizeTests.filled(width: 413, height: 97, color)
        for size in [
            PixelSize(width: 954, height: 31), PixelSize(width: 40, height: 97), PixelSize(width: 1, height: 1),
        ] {
            #expect(flat.resized(to: size).pixels == color.repeated(size.width * size.height), "\(size)")
        }
    }

    @Test func resamplersForTheSameSizesAreMadeOnceAndGiveTheSameBytes() throws {
        let (source, target) = (PixelSize(width: 611, height: 409), PixelSize(width: 487, height: 326))
        let first = RowResampler.reused(sourceSize: source, targetSize: target, isOpaque: true)
        let second = RowResampler.reused(sourceSize: source, targetSize: target, isOpaque: true)
        let other = RowResampler.reused(
            sourceSize: source, targetSize: PixelSize(width: 486, height: 325), isOpaque: true)
        #expect(other.targetSize.width == 486 && second.targetSize == target)
        #if arch(x86_64)
        // The kept fixed-point axes are one object. (Elsewhere opaque images take the Float passes,
        // and there is no object to compare; the bytes below still must agree.)
        let axes = try #require(first.fixedPoint)
        #expect(axes === second.fixedPoint)
        #expect(other.fixedPoint !== first.fixedPoint)
        #endif
        let card = Self.opaqueCard(width: source.width, height: source.height, seed: 7)
        let made = RowResampler(sourceSize: source, targetSize: target, isOpaque: true)
        let kept = card.pixels.withUnsafeBytes {
            first.resample(source: $0.baseAddress!, bytesPerRow: card.bytesPerRow)
        }
        let fresh = card.pixels.withUnsafeBytes {
            made.resample(source: $0.baseAddress!, bytesPerRow: card.bytesPerRow)
        }
        #expect(kept == fresh)
        // A resampler with more than 32k weights is not kept: a large shrink made twice is made twice.
        let large = (PixelSize(width: 6000, height: 4000), PixelSize(width: 300, height: 200))
        let once = RowResampler.reused(sourceSize: large.0, targetSize: large.1, isOpaque: true)
        let twice = RowResampler.reused(sourceSize: large.0, targetSize: large.1, isOpaque: true)
        #expect(once.targetSize == twice.targetSize)
        #if arch(x86_64)
        let onceAxes = try #require(once.fixedPoint)
        #expect(onceAxes !== twice.fixedPoint)
        #endif
    }

    @Test func inconsistentWeightsAreRefused() {
        // A window reaching past the end of the source, and more taps than the source has.
        var starts: [Int32] = [0, 3]
        let weights: [Float] = [0.5, 0.5, 0.5, 0.5]
        #expect(cresample_axis_create(4, 2, 2, &starts, weights) == nil)
        starts = [0, 0]
        #expect(cresample_axis_create(1, 2, 2, &starts, weights) == nil)
        starts = [0, 2]
        let axis = cresample_axis_create(4, 2, 2, &starts, weights)
        #expect(axis != nil)
        cresample_axis_destroy(axis)
    }
}
