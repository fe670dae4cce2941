import Foundation

/// The two passes of ``Bitmap/resized(to:)`` over raw buffers, in row ranges that may run on
/// different threads.
///
/// The horizontal pass turns source rows (straight-alpha RGBA8) into premultiplied Float rows of the
/// target width; the vertical pass sums those into target rows of straight-alpha bytes. Calls on
/// disjoint ranges write disjoint memory, so they can run at once. Target row `y` of the vertical pass
/// needs intermediate rows up to ``sourceRowsNeeded(forTargetRows:)``, which lets a caller start it
/// while later source rows are still being decoded.
struct RowResampler {
    let sourceSize: PixelSize
    let targetSize: PixelSize
    /// Whether every source pixel is opaque (a JPEG): premultiplying and dividing by alpha are then
    /// no-ops, and skipping them saves a division per pixel.
    let isOpaque: Bool
    private let horizontal: ResamplingWeights
    private let vertical: ResamplingWeights

    init(sourceSize: PixelSize, targetSize: PixelSize, isOpaque: Bool) {
        self.sourceSize = sourceSize
        self.targetSize = targetSize
        self.isOpaque = isOpaque
        horizontal = ResamplingWeights(sourceCount: sourceSize.width, targetCount: targetSize.width)
        vertical = ResamplingWeights(sourceCount: sourceSize.height, targetCount: targetSize.height)
    }

    /// The number of intermediate rows (from the top) that target rows `0..<count` read.
    func sourceRowsNeeded(forTargetRows count: Int) -> Int {
        count == 0 ? 0 : vertical.starts[count - 1] + vertical.tapCount
    }

    /// Resamples source `rows` into the intermediate: `source` points at row 0, `bytesPerRow` apart.
    ///
    /// - Parameter row: scratch for one premultiplied source row, at least `sourceSize.width` long.
    func horizontalPass(
        rows: Range<Int>, source: UnsafeRawPointer, bytesPerRow: Int,
        intermediate: UnsafeMutablePointer<SIMD4<Float>>, row: UnsafeMutableBufferPointer<SIMD4<Float>>
    ) {
        let width = targetSize.width
        let sourceRow = UnsafeMutableBufferPointer(rebasing: row[0..<sourceSize.width])
        for y in rows {
            if isOpaque {
                Self.widen(source + y * bytesPerRow, into: sourceRow)
            } else {
                Self.premultiply(source + y * bytesPerRow, into: sourceRow)
            }
            let target = UnsafeMutableBufferPointer(start: intermediate + y * width, count: width)
            horizontal.resample(UnsafeBufferPointer(sourceRow), into: target)
        }
    }

    /// One row of opaque bytes as Float RGBA.
    @inline(__always)
    private static func widen(_ source: UnsafeRawPointer, into row: UnsafeMutableBufferPointer<SIMD4<Float>>) {
        for x in 0..<row.count {
            row[x] = SIMD4<Float>(source.loadUnaligned(fromByteOffset: x * 4, as: SIMD4<UInt8>.self))
        }
    }

    /// One row of straight-alpha bytes as premultiplied Float RGBA.
    @inline(__always)
    private static func premultiply(_ source: UnsafeRawPointer, into row: UnsafeMutableBufferPointer<SIMD4<Float>>) {
        for x in 0..<row.count {
            var color = SIMD4<Float>(source.loadUnaligned(fromByteOffset: x * 4, as: SIMD4<UInt8>.self))
            let alpha = color.w
            color.w = 255
            row[x] = color * (alpha / 255)
        }
    }

    /// Sums intermediate rows into target `rows` of straight-alpha bytes (`output` points at target row 0).
    ///
    /// - Parameter sums: scratch for one target row, at least `targetSize.width` long.
    func verticalPass(
        rows: Range<Int>, intermediate: UnsafePointer<SIMD4<Float>>, output: UnsafeMutablePointer<UInt8>,
        sums: UnsafeMutableBufferPointer<SIMD4<Float>>
    ) {
        let width = targetSize.width
        let taps = vertical.tapCount
        vertical.weights.withUnsafeBufferPointer { kernel in
            vertical.starts.withUnsafeBufferPointer { starts in
                for y in rows {
                    let first = y * taps
                    var tap = 0
                    // Two taps a sweep halves the loads and stores of the running sums.
                    while tap + 2 <= taps {
                        let (weight0, weight1) = (kernel[first + tap], kernel[first + tap + 1])
                        let row0 = intermediate + (starts[y] + tap) * width
                        let row1 = row0 + width
                        if tap == 0 {
                            for x in 0..<width { sums[x] = row0[x] * weight0 + row1[x] * weight1 }
                        } else {
                            for x in 0..<width { sums[x] += row0[x] * weight0 + row1[x] * weight1 }
                        }
                        tap += 2
                    }
                    if tap < taps {
                        let weight = kernel[first + tap]
                        let row = intermediate + (starts[y] + tap) * width
                        if tap == 0 {
                            for x in 0..<width { sums[x] = row[x] * weight }
                        } else {
                            for x in 0..<width { sums[x] += row[x] * weight }
                        }
                    }
                    let outputRow = output + y * width * 4
                    if isOpaque {
                        for x in 0..<width { Self.storeOpaque(sums[x], into: outputRow + x * 4) }
                    } else {
                        for x in 0..<width { Self.storeStraight(sums[x], into: outputRow + x * 4) }
                    }
                }
            }
        }
    }

    /// Writes one pixel of an opaque image as bytes, alpha 255.
    @inline(__always)
    private static func storeOpaque(_ pixel: SIMD4<Float>, into output: UnsafeMutablePointer<UInt8>) {
        // As in storeStraight: clamp, then add 0.5 and truncate.
        output[0] = UInt8(min(max(pixel.x, 0), 255) + 0.5)
        output[1] = UInt8(min(max(pixel.y, 0), 255) + 0.5)
        output[2] = UInt8(min(max(pixel.z, 0), 255) + 0.5)
        output[3] = 255
    }

    /// Writes one premultiplied pixel as straight-alpha bytes.
    @inline(__always)
    private static func storeStraight(_ pixel: SIMD4<Float>, into output: UnsafeMutablePointer<UInt8>) {
        let alpha = pixel.w
        // A pixel whose alpha rounds to zero is invisible; its colour would only be amplified noise.
        guard alpha >= 0.5 else {
            UnsafeMutableRawPointer(output).storeBytes(of: 0, as: UInt32.self)
            return
        }
        let scale = 255 / alpha
        // Values are clamped to 0...255 first, so adding 0.5 and truncating rounds to nearest
        // (much cheaper than the generic SIMD clamping and rounding, which do not inline here).
        output[0] = UInt8(min(max(pixel.x * scale, 0), 255) + 0.5)
        output[1] = UInt8(min(max(pixel.y * scale, 0), 255) + 0.5)
        output[2] = UInt8(min(max(pixel.z * scale, 0), 255) + 0.5)
        output[3] = UInt8(min(alpha, 255) + 0.5)
    }
}
