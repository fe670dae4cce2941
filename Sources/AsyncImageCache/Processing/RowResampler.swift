import CResample
import Foundation

/// The two passes of ``Bitmap/resized(to:)`` over raw buffers, in row ranges that may run on
/// different threads.
///
/// The horizontal pass turns source rows (straight-alpha RGBA8) into intermediate rows of the target
/// width; the vertical pass sums those into target rows of straight-alpha bytes. An image with
/// transparency is filtered premultiplied, in Float. An opaque one (every JPEG) needs no alpha
/// arithmetic, and on x86-64 is filtered in fixed point with byte rows in between, as Pillow does:
/// the SSE2 and AVX2 kernels of `CResample` multiply-add pairs of 16-bit values, several times the
/// work per instruction of Float, on a quarter of the memory. Elsewhere (ARM) its plain C kernels
/// would be slower than SIMD Float, so opaque images take the Float passes there. Calls on
/// disjoint ranges write disjoint memory, so they can run at once. Target row `y` of the vertical pass
/// needs intermediate rows up to ``sourceRowsNeeded(forTargetRows:)``, which lets a caller start it
/// while later source rows are still being decoded.
struct RowResampler {
    let sourceSize: PixelSize
    let targetSize: PixelSize
    /// Whether every source pixel is opaque (a JPEG): premultiplying and dividing by alpha are then
    /// no-ops, and skipping them saves a division per pixel.
    let isOpaque: Bool
    /// The width and height the picture spans in source pixels when less than ``sourceSize``; `nil` for all.
    let sourceExtent: SIMD2<Double>?
    /// The rows of intermediate a resize streaming through a ring must keep besides the rows of one batch.
    let ringRowsBesidesBatch: Int
    private let horizontal: ResamplingWeights
    private let vertical: ResamplingWeights
    /// The two axes in fixed point, for an opaque image; `nil` means Float.
    let fixedPoint: FixedPointAxes?
    /// For each target row, how many intermediate rows (from the top) it and the rows above it read.
    private let rowsNeeded: [Int]

    /// - Parameter sourceExtent: the width and height the picture spans in source pixels, when less than
    ///   `sourceSize` (a JPEG decoded at a reduced DCT scale, whose last column and row are partial
    ///   blocks: see ``ResamplingWeights/init(sourceCount:targetCount:sourceExtent:lanes:)``); `nil` for all of it.
    init(sourceSize: PixelSize, targetSize: PixelSize, isOpaque: Bool, sourceExtent: SIMD2<Double>? = nil) {
        self.sourceSize = sourceSize
        self.targetSize = targetSize
        self.isOpaque = isOpaque
        self.sourceExtent = sourceExtent
        // Without vector kernels (on ARM, for now) plain C integers are slower than SIMD Float.
        let wantsFixedPoint = isOpaque && cresample_has_vector_kernels() != 0
        var horizontal = ResamplingWeights(
            sourceCount: sourceSize.width, targetCount: targetSize.width, sourceExtent: sourceExtent?.x,
            lanes: !wantsFixedPoint)
        var vertical = ResamplingWeights(
            sourceCount: sourceSize.height, targetCount: targetSize.height, sourceExtent: sourceExtent?.y,
            lanes: !wantsFixedPoint)
        fixedPoint = wantsFixedPoint ? FixedPointAxes(horizontal, vertical, sourceSize) : nil
        if wantsFixedPoint && fixedPoint == nil {
            // The C side refused the weights (out of memory): Float after all, whose passes need the lanes.
            horizontal = ResamplingWeights(
                sourceCount: sourceSize.width, targetCount: targetSize.width, sourceExtent: sourceExtent?.x)
            vertical = ResamplingWeights(
                sourceCount: sourceSize.height, targetCount: targetSize.height, sourceExtent: sourceExtent?.y)
        }
        self.horizontal = horizontal
        self.vertical = vertical
        // Windows move down with the target row, but trimmed taps can make one start a row before
        // the one above it: keep the running maximum, and the largest such step back.
        let taps = vertical.tapCount
        var highest = 0
        rowsNeeded = vertical.starts.map { start in
            highest = max(highest, start)
            return highest + taps
        }
        var lowest = Int.max
        var stepBack = 0
        for start in vertical.starts.reversed() {
            lowest = min(lowest, start)
            stepBack = max(stepBack, start - lowest)
        }
        ringRowsBesidesBatch = taps + stepBack
    }

    /// A resampler for these sizes, made once and kept among the last four made: a list of photos of
    /// one size shown at one width needs the same weights for each, and working them out (two sines
    /// per tap) costs about a tenth of a resize. Only resamplers of up to 32k weights are kept (a
    /// 1200x800 to 954x636 one has 19k), so the kept ones stay under a few megabytes.
    static func reused(
        sourceSize: PixelSize, targetSize: PixelSize, isOpaque: Bool, sourceExtent: SIMD2<Double>? = nil
    ) -> RowResampler {
        let matches = { (resampler: RowResampler) in
            resampler.sourceSize == sourceSize && resampler.targetSize == targetSize && resampler.isOpaque == isOpaque
                && resampler.sourceExtent == sourceExtent
        }
        if let kept = recentResamplers.withLock({ $0.last(where: matches) }) { return kept }
        // Made outside the lock; two threads making the same one at once both keep a copy briefly.
        let made = RowResampler(
            sourceSize: sourceSize, targetSize: targetSize, isOpaque: isOpaque, sourceExtent: sourceExtent)
        guard made.horizontal.weights.count + made.vertical.weights.count <= 1 << 15 else { return made }
        recentResamplers.withLock { kept in
            kept.removeAll(where: matches)
            kept.append(made)
            if kept.count > 4 { kept.removeFirst() }
        }
        return made
    }

    /// Allocates `capacity` intermediate rows of the target width, in the form the passes use.
    func allocateIntermediate(capacity: Int) -> IntermediateRows {
        let pixelBytes = fixedPoint == nil ? MemoryLayout<SIMD4<Float>>.stride : 4
        let base = UnsafeMutableRawPointer.allocate(
            byteCount: targetSize.width * capacity * pixelBytes, alignment: MemoryLayout<SIMD4<Float>>.alignment)
        if fixedPoint == nil {
            base.bindMemory(to: SIMD4<Float>.self, capacity: targetSize.width * capacity)
        } else {
            base.bindMemory(to: UInt8.self, capacity: targetSize.width * capacity * 4)
        }
        return IntermediateRows(base: base, rowBytes: targetSize.width * pixelBytes, capacity: capacity)
    }

    /// The number of intermediate rows (from the top) that target rows `0..<count` read.
    func sourceRowsNeeded(forTargetRows count: Int) -> Int {
        count == 0 ? 0 : rowsNeeded[count - 1]
    }

    /// Resamples source `rows` into the intermediate. Source row `y` starts at
    /// `source + (y - firstSourceRow) * bytesPerRow`.
    ///
    /// - Parameter row: scratch for one premultiplied source row, at least `sourceSize.width` long
    ///   (the fixed-point pass does not use it).
    func horizontalPass(
        rows: Range<Int>, source: UnsafeRawPointer, firstSourceRow: Int = 0, bytesPerRow: Int,
        intermediate: IntermediateRows, row: UnsafeMutableBufferPointer<SIMD4<Float>>
    ) {
        if let fixedPoint {
            for y in rows {
                cresample_row(
                    fixedPoint.horizontal,
                    (source + (y - firstSourceRow) * bytesPerRow).assumingMemoryBound(to: UInt8.self),
                    intermediate.row(y).assumingMemoryBound(to: UInt8.self))
            }
            return
        }
        let width = targetSize.width
        let sourceRow = UnsafeMutableBufferPointer(rebasing: row[0..<sourceSize.width])
        for y in rows {
            let bytes = source + (y - firstSourceRow) * bytesPerRow
            if isOpaque {
                Self.widen(bytes, into: sourceRow)
            } else {
                Self.premultiply(bytes, into: sourceRow)
            }
            let target = UnsafeMutableBufferPointer(start: intermediate.floatRow(y), count: width)
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
    /// - Parameter sums: scratch for one target row, at least `targetSize.width` long (the
    ///   fixed-point pass does not use it).
    func verticalPass(
        rows: Range<Int>, intermediate: IntermediateRows, output: UnsafeMutablePointer<UInt8>,
        sums: UnsafeMutableBufferPointer<SIMD4<Float>>
    ) {
        let width = targetSize.width
        let taps = vertical.tapCount
        if let fixedPoint {
            withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: taps) { tapRows in
                for y in rows {
                    let start = vertical.starts[y]
                    for tap in 0..<taps {
                        tapRows[tap] = UnsafePointer(intermediate.row(start + tap).assumingMemoryBound(to: UInt8.self))
                    }
                    cresample_column(
                        fixedPoint.vertical, Int32(y), tapRows.baseAddress, output + y * width * 4, Int32(width))
                }
            }
            return
        }
        vertical.lanes.withUnsafeBufferPointer { kernel in
            vertical.starts.withUnsafeBufferPointer { starts in
                for y in rows {
                    let first = y * taps
                    var tap = 0
                    // Four taps a sweep: a quarter of the loads and stores of the running sums.
                    while tap + 4 <= taps {
                        let (weight0, weight1) = (kernel[first + tap], kernel[first + tap + 1])
                        let (weight2, weight3) = (kernel[first + tap + 2], kernel[first + tap + 3])
                        let row0 = intermediate.floatRow(starts[y] + tap)
                        let row1 = intermediate.floatRow(starts[y] + tap + 1)
                        let row2 = intermediate.floatRow(starts[y] + tap + 2)
                        let row3 = intermediate.floatRow(starts[y] + tap + 3)
                        if tap == 0 {
                            for x in 0..<width {
                                sums[x] =
                                    (row0[x] * weight0 + row1[x] * weight1) + (row2[x] * weight2 + row3[x] * weight3)
                            }
                        } else {
                            for x in 0..<width {
                                sums[x] +=
                                    (row0[x] * weight0 + row1[x] * weight1) + (row2[x] * weight2 + row3[x] * weight3)
                            }
                        }
                        tap += 4
                    }
                    while tap < taps {
                        let weight = kernel[first + tap]
                        let row = intermediate.floatRow(starts[y] + tap)
                        if tap == 0 {
                            for x in 0..<width { sums[x] = row[x] * weight }
                        } else {
                            for x in 0..<width { sums[x] += row[x] * weight }
                        }
                        tap += 1
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

/// The resamplers ``RowResampler/reused(sourceSize:targetSize:isOpaque:sourceExtent:)`` keeps, most recent last.
private let recentResamplers = LockedBox<[RowResampler]>([])

/// The horizontally resampled rows, the target width wide: premultiplied Float RGBA, or RGBA bytes
/// for the fixed-point passes (``RowResampler/allocateIntermediate(capacity:)`` makes the right
/// kind). Row `y` lives in slot `y % capacity`, so a buffer of a few rows can serve a whole image
/// as a ring, as long as a row is read before the row `capacity` further down overwrites it.
struct IntermediateRows {
    let base: UnsafeMutableRawPointer
    let rowBytes: Int
    let capacity: Int

    @inline(__always)
    func row(_ y: Int) -> UnsafeMutableRawPointer {
        base + (y % capacity) * rowBytes
    }

    @inline(__always)
    func floatRow(_ y: Int) -> UnsafeMutablePointer<SIMD4<Float>> {
        row(y).assumingMemoryBound(to: SIMD4<Float>.self)
    }
}

/// The fixed-point form of a resize's two axes (`CResample`), freed with it. Read-only once made,
/// so any thread may use it.
final class FixedPointAxes: @unchecked Sendable {
    let horizontal: OpaquePointer
    let vertical: OpaquePointer

    /// `nil` where the C side refuses the weights (out of memory); the Float passes serve then.
    init?(_ horizontal: ResamplingWeights, _ vertical: ResamplingWeights, _ sourceSize: PixelSize) {
        func axis(_ weights: ResamplingWeights, _ sourceCount: Int) -> OpaquePointer? {
            let starts = weights.starts.map { Int32($0) }
            return cresample_axis_create(
                Int32(sourceCount), Int32(weights.starts.count), Int32(weights.tapCount), starts, weights.weights)
        }
        guard let rows = axis(horizontal, sourceSize.width) else { return nil }
        guard let columns = axis(vertical, sourceSize.height) else {
            cresample_axis_destroy(rows)
            return nil
        }
        self.horizontal = rows
        self.vertical = columns
    }

    deinit {
        cresample_axis_destroy(horizontal)
        cresample_axis_destroy(vertical)
    }
}
