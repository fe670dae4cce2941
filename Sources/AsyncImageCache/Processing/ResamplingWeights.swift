import Foundation

/// The Lanczos-3 weights that resample one axis from `sourceCount` to `targetCount` samples.
///
/// Every target sample gets the same number of taps, ``tapCount``, starting at its own ``starts``
/// entry; taps beyond the filter's reach carry weight zero. The fixed count keeps the inner loops of
/// ``Bitmap/resized(to:)`` free of per-pixel bounds and branches.
struct ResamplingWeights {
    /// The number of source samples each target sample reads.
    private(set) var tapCount: Int
    /// The first source sample of each target sample.
    private(set) var starts: [Int]
    /// `tapCount` weights per target sample, each group summing to 1, each weight repeated across
    /// the four lanes of a pixel: loading a ready vector costs one instruction where broadcasting a
    /// scalar costs two.
    private(set) var lanes: [SIMD4<Float>] = []
    /// The same weights as scalars, `tapCount` per target sample.
    private(set) var weights: [Float]

    /// The Lanczos kernel with three lobes: `sinc(x) * sinc(x / 3)` for `|x| < 3`.
    static func lanczos3(_ x: Double) -> Double {
        if x == 0 { return 1 }
        guard abs(x) < 3 else { return 0 }
        let piX = Double.pi * x
        return 3 * sin(piX) * sin(piX / 3) / (piX * piX)
    }

    /// - Parameters:
    ///   - sourceExtent: how many source samples the picture spans, when fewer than `sourceCount`: a JPEG
    ///     decoded at scale `n/8` has `ceil(side * n / 8)` samples, the last one a partial block padded by
    ///     the encoder, but spans `side * n / 8` of them. The target spans that extent, so the picture is
    ///     not stretched; the last sample still contributes where the filter reaches it. `nil` spans all.
    ///   - lanes: whether to fill ``lanes``, which only the Float passes read.
    init(sourceCount: Int, targetCount: Int, sourceExtent: Double? = nil, lanes: Bool = true) {
        self.init(paddedFor: sourceCount, targetCount: targetCount, sourceExtent: sourceExtent)
        trimZeroTaps(sourceCount: sourceCount)
        if lanes { self.lanes = weights.map { SIMD4(repeating: $0) } }
    }

    /// Weights with a tap count that surely covers the filter, some taps at the edges weighing zero.
    private init(paddedFor sourceCount: Int, targetCount: Int, sourceExtent: Double?) {
        let extent = min(Double(sourceCount), max(sourceExtent ?? Double(sourceCount), Double(sourceCount - 1)))
        let scale = Double(targetCount) / extent
        // When shrinking, widen the kernel by the reduction factor so that every source sample
        // contributes (a low-pass filter); when enlarging, interpolate with the kernel as it is.
        let filterScale = max(1, 1 / scale)
        let support = 3 * filterScale
        tapCount = min(sourceCount, Int((2 * support).rounded(.up)) + 2)
        starts = [Int](repeating: 0, count: targetCount)
        weights = [Float](repeating: 0, count: targetCount * tapCount)
        var kernel = [Double](repeating: 0, count: tapCount)
        for target in 0..<targetCount {
            // Sample centres sit at half-integer positions on both axes.
            let center = (Double(target) + 0.5) / scale
            let first = max(0, Int((center - support).rounded(.down)))
            let start = min(first, sourceCount - tapCount)
            var sum = 0.0
            for tap in 0..<tapCount {
                let distance = (Double(start + tap) + 0.5 - center) / filterScale
                kernel[tap] = Self.lanczos3(distance)
                sum += kernel[tap]
            }
            starts[target] = start
            if sum == 0 {
                // Not reachable with Lanczos-3, whose nearest tap always weighs most; guard anyway.
                let nearest = min(sourceCount - 1, max(0, Int(center))) - start
                weights[target * tapCount + nearest] = 1
                continue
            }
            for tap in 0..<tapCount {
                weights[target * tapCount + tap] = Float(kernel[tap] / sum)
            }
        }
    }

    /// Drops the taps that weigh zero for every target sample: the padded count is up to two taps
    /// (a fifth) more than the filter reaches, and every tap costs a multiply-add per pixel.
    private mutating func trimZeroTaps(sourceCount: Int) {
        let padded = tapCount
        var firsts = [Int](repeating: 0, count: starts.count)
        var span = 1
        for target in starts.indices {
            let group = weights[(target * padded)..<((target + 1) * padded)]
            let first = group.firstIndex { $0 != 0 } ?? target * padded
            let last = group.lastIndex { $0 != 0 } ?? first
            firsts[target] = first - target * padded
            span = max(span, last - first + 1)
        }
        guard span < padded else { return }
        var trimmed = [Float](repeating: 0, count: starts.count * span)
        for target in starts.indices {
            // Near the right edge the window cannot start later than `sourceCount - span`.
            let start = min(starts[target] + firsts[target], sourceCount - span)
            for tap in 0..<span {
                let source = start + tap - starts[target]
                if source < padded { trimmed[target * span + tap] = weights[target * padded + source] }
            }
            starts[target] = start
        }
        tapCount = span
        weights = trimmed
    }

    /// Resamples one row (or any run of samples) of `source` into `target`, one value per target sample.
    func resample(_ source: UnsafeBufferPointer<SIMD4<Float>>, into target: UnsafeMutableBufferPointer<SIMD4<Float>>) {
        let taps = tapCount
        starts.withUnsafeBufferPointer { starts in
            lanes.withUnsafeBufferPointer { kernel in
                for index in 0..<target.count {
                    let start = starts[index]
                    let first = index * taps
                    // Four running sums, so each addition need not wait for the one before it.
                    var sums = (SIMD4<Float>.zero, SIMD4<Float>.zero, SIMD4<Float>.zero, SIMD4<Float>.zero)
                    var tap = 0
                    while tap + 4 <= taps {
                        sums.0 += source[start + tap] * kernel[first + tap]
                        sums.1 += source[start + tap + 1] * kernel[first + tap + 1]
                        sums.2 += source[start + tap + 2] * kernel[first + tap + 2]
                        sums.3 += source[start + tap + 3] * kernel[first + tap + 3]
                        tap += 4
                    }
                    while tap < taps {
                        sums.0 += source[start + tap] * kernel[first + tap]
                        tap += 1
                    }
                    target[index] = (sums.0 + sums.1) + (sums.2 + sums.3)
                }
            }
        }
    }
}
