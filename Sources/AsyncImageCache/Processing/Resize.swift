import CResample

extension Bitmap {
    /// The bitmap resampled to exactly `size`.
    ///
    /// Uses a separable Lanczos-3 filter, widened by the reduction factor when shrinking, so detail
    /// is averaged rather than skipped. Filtering runs on premultiplied alpha, so a shape on a
    /// transparent background keeps its colour at the edges instead of gaining a dark fringe; the
    /// result has straight alpha again. On x86-64 an opaque bitmap is filtered in 16-bit fixed point
    /// (AVX2 or SSE2): several times faster, with a PSNR over 40 dB against exact arithmetic. Asking
    /// for the current size returns the bitmap unchanged. Large images are split across the cores.
    ///
    /// - Precondition: `size` is at least 1x1.
    public func resized(to size: PixelSize) -> Bitmap {
        precondition(size.width > 0 && size.height > 0, "cannot resize to \(size)")
        guard size != pixelSize else { return self }
        // Rows first: when shrinking, the intermediate (target width x source height) is the
        // narrow one, and the vertical pass then sums whole contiguous rows of it.
        let resampler = RowResampler.reused(sourceSize: pixelSize, targetSize: size, isOpaque: isOpaque)
        let result = pixels.withUnsafeBytes { source in
            resampler.resample(source: source.baseAddress!, bytesPerRow: bytesPerRow)
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
