import CResample

extension Bitmap {
    /// The bitmap resampled to exactly `size`.
    ///
    /// Uses a separable Lanczos-3 filter, widened by the reduction factor when shrinking, so detail
    /// is averaged rather than skipped. Filtering runs on premultiplied alpha, so a shape on a
    /// transparent background keeps its colour at the edges instead of gaining a dark fringe; the
    /// result has straight alpha again. On x86-64 an opaque bitmap is filtered in 16-bit fixed point
    /// (AVX2 or SSE2): several times faster, with a PSNR over 40 dB against exact arithmetic on photos
    /// (noise-like detail, shrunk a little or enlarged, can be 10 and more levels off: the pass
    /// between the two directions is rounded and clamped to bytes, as in Pillow). Asking
    /// for the current size returns the bitmap unchanged. Large images are split across the cores. An axis
    /// of more than 65536 pixels shrunk 128 times or more has groups of pixels averaged first, which
    /// keeps the filter's weights to a few per target pixel.
    ///
    /// - Precondition: `size` is at least 1x1, and its `width * height * 4` bytes can be allocated: as
    ///   with an array of that many bytes, a size too large for memory stops the process. The store asks
    ///   only for the size it reports for an image, or a smaller one, within its pixel budget (it enlarges
    ///   only a decode that came out smaller, such as a HEIF or AVIF that codes a smaller picture than the
    ///   size it declares), so only a direct call can.
    public func resized(to size: PixelSize) -> Bitmap {
        resized(to: size, sourceExtent: nil)
    }

    /// ``resized(to:)`` for a bitmap whose picture spans only `sourceExtent` of its pixels (a JPEG
    /// decoded at a reduced DCT scale: see ``RowResampler/init(sourceSize:targetSize:isOpaque:sourceExtent:)``).
    func resized(to size: PixelSize, sourceExtent: SIMD2<Double>?) -> Bitmap {
        // Nothing can cancel it, so it always gives a bitmap.
        resized(to: size, sourceExtent: sourceExtent, cancellation: nil)!
    }

    /// ``resized(to:sourceExtent:)`` that stops part way, and returns `nil`, once `cancellation` is raised
    /// (read every few rows): a decode nobody wants any more does not pay for its resize either. Without
    /// `usesOtherThreads` it runs on the calling thread alone (a prefetch's resize).
    func resized(
        to size: PixelSize, sourceExtent: SIMD2<Double>?, cancellation: DecodeCancellation?,
        usesOtherThreads: Bool = true
    ) -> Bitmap? {
        precondition(size.width > 0 && size.height > 0, "cannot resize to \(size)")
        guard size != pixelSize || sourceExtent != nil else { return self }
        let (columns, rows) = Self.groupsAveragedFirst(from: pixelSize, to: size)
        if columns > 1 || rows > 1 {
            return averaging(columns: columns, rows: rows).resized(
                to: size, sourceExtent: nil, cancellation: cancellation, usesOtherThreads: usesOtherThreads)
        }
        // Rows first: when shrinking, the intermediate (target width x source height) is the
        // narrow one, and the vertical pass then sums whole contiguous rows of it.
        let resampler = RowResampler.reused(
            sourceSize: pixelSize, targetSize: size, isOpaque: isOpaque, sourceExtent: sourceExtent)
        let result = pixels.withUnsafeBytes { source in
            resampler.resample(
                source: source.baseAddress!, bytesPerRow: bytesPerRow, cancellation: cancellation,
                usesOtherThreads: usesOtherThreads)
        }
        return result.map { Bitmap(width: size.width, height: size.height, pixels: $0) }
    }

    /// How many columns and rows to average into one before the Lanczos filter, 1 for none.
    ///
    /// Shrinking an axis of `n` samples takes Lanczos weights for about `6 n` taps, whatever the target
    /// (each target sample reads 6 x the reduction factor of them), five floats apiece with their vector
    /// copies: for an image a row or two high, many times the bitmap (a 16777216x1 WebP canvas shown 320
    /// wide took 2.2 GB). Along an axis of more than 65536 samples shrunk 128 times or more, whole groups
    /// of samples are averaged first, leaving 64 to 128 per target sample for the filter, as Pillow's
    /// `reduce` does before its thumbnails.
    static func groupsAveragedFirst(from source: PixelSize, to target: PixelSize) -> (columns: Int, rows: Int) {
        func group(_ count: Int, _ targetCount: Int) -> Int {
            count > 1 << 16 && count / targetCount >= 128 ? count / targetCount / 64 : 1
        }
        return (group(source.width, target.width), group(source.height, target.height))
    }

    /// The bitmap with each `columns` x `rows` block of pixels (smaller at the right and bottom edges)
    /// averaged into one, colour weighted by alpha.
    func averaging(columns: Int, rows: Int) -> Bitmap {
        let size = PixelSize(width: (width + columns - 1) / columns, height: (height + rows - 1) / rows)
        var result = [UInt8](repeating: 0, count: size.pixelCount * 4)
        pixels.withUnsafeBufferPointer { source in
            for blockY in 0..<size.height {
                let rowRange = (blockY * rows)..<min(height, (blockY + 1) * rows)
                for blockX in 0..<size.width {
                    let columnRange = (blockX * columns)..<min(width, (blockX + 1) * columns)
                    // Sums of at most 2^24 x 255 x 255: far inside Int.
                    var (red, green, blue, alpha) = (0, 0, 0, 0)
                    for y in rowRange {
                        for x in columnRange {
                            let offset = (y * width + x) * 4
                            let pixelAlpha = Int(source[offset + 3])
                            red += Int(source[offset]) * pixelAlpha
                            green += Int(source[offset + 1]) * pixelAlpha
                            blue += Int(source[offset + 2]) * pixelAlpha
                            alpha += pixelAlpha
                        }
                    }
                    let count = rowRange.count * columnRange.count
                    let offset = (blockY * size.width + blockX) * 4
                    if alpha > 0 {
                        result[offset] = UInt8((red + alpha / 2) / alpha)
                        result[offset + 1] = UInt8((green + alpha / 2) / alpha)
                        result[offset + 2] = UInt8((blue + alpha / 2) / alpha)
                    }
                    result[offset + 3] = UInt8((alpha + count / 2) / count)
                }
            }
        }
        return Bitmap(width: size.width, height: size.height, pixels: result)
    }

    /// Resizes to `size` with every kernel level the processor has (plain C, SSE2, AVX2) and stops
    /// the process if two results differ or the size is wrong (the fuzzer). The level is a
    /// process-wide setting: only for a single-threaded caller.
    @_spi(Fuzzing) public func fuzzResizeAgreement(to size: PixelSize) {
        let best = cresample_set_level(2)
        defer { cresample_set_level(2) }
        var first: Bitmap?
        for level in stride(from: best, through: 0, by: -1) {
            cresample_set_level(level)
            let resized = resized(to: size)
            precondition(resized.pixelSize == size, "resized to \(resized.pixelSize), not \(size)")
            if let first {
                precondition(first.pixels == resized.pixels, "\(pixelSize) -> \(size): level \(level) differs")
            } else {
                first = resized
            }
        }
    }
}
