extension Bitmap {
    /// The bitmap resampled to exactly `size`.
    ///
    /// Uses a separable Lanczos-3 filter, widened by the reduction factor when shrinking, so detail
    /// is averaged rather than skipped. Filtering runs on premultiplied alpha, so a shape on a
    /// transparent background keeps its colour at the edges instead of gaining a dark fringe; the
    /// result has straight alpha again. Asking for the current size returns the bitmap unchanged.
    ///
    /// - Precondition: `size` is at least 1x1.
    public func resized(to size: PixelSize) -> Bitmap {
        precondition(size.width > 0 && size.height > 0, "cannot resize to \(size)")
        guard size != pixelSize else { return self }
        let horizontal = ResamplingWeights(sourceCount: width, targetCount: size.width)
        let vertical = ResamplingWeights(sourceCount: height, targetCount: size.height)
        // Rows first: when shrinking, the intermediate (target width x source height) is the
        // narrow one, and the vertical pass then sums whole contiguous rows of it.
        let intermediate = horizontalPass(horizontal, targetWidth: size.width)
        let result = Self.verticalPass(vertical, intermediate: intermediate, size: size)
        return Bitmap(width: size.width, height: size.height, pixels: result)
    }

    /// Every row premultiplied and resampled to `targetWidth` pixels, in premultiplied Float RGBA (0-255).
    private func horizontalPass(_ weights: ResamplingWeights, targetWidth: Int) -> [SIMD4<Float>] {
        var intermediate = [SIMD4<Float>](repeating: .zero, count: targetWidth * height)
        var row = [SIMD4<Float>](repeating: .zero, count: width)
        pixels.withUnsafeBytes { source in
            intermediate.withUnsafeMutableBufferPointer { intermediate in
                row.withUnsafeMutableBufferPointer { row in
                    for y in 0..<height {
                        Self.premultiply(source, offset: y * bytesPerRow, into: row)
                        let output = intermediate[y * targetWidth..<(y + 1) * targetWidth]
                        weights.resample(UnsafeBufferPointer(row), into: UnsafeMutableBufferPointer(rebasing: output))
                    }
                }
            }
        }
        return intermediate
    }

    /// One row of straight-alpha bytes from `offset` as premultiplied Float RGBA.
    private static func premultiply(
        _ source: UnsafeRawBufferPointer, offset: Int, into row: UnsafeMutableBufferPointer<SIMD4<Float>>
    ) {
        for x in 0..<row.count {
            var color = SIMD4<Float>(source.loadUnaligned(fromByteOffset: offset + x * 4, as: SIMD4<UInt8>.self))
            let alpha = color.w
            color.w = 255
            row[x] = color * (alpha / 255)
        }
    }

    /// The intermediate rows resampled to `size.height`, un-premultiplied, clamped and rounded to bytes.
    private static func verticalPass(
        _ weights: ResamplingWeights, intermediate: [SIMD4<Float>], size: PixelSize
    ) -> [UInt8] {
        let width = size.width
        let taps = weights.tapCount
        var sums = [SIMD4<Float>](repeating: .zero, count: width)
        var result = [UInt8](repeating: 0, count: size.width * size.height * 4)
        intermediate.withUnsafeBufferPointer { input in
            weights.weights.withUnsafeBufferPointer { kernel in
                sums.withUnsafeMutableBufferPointer { sums in
                    result.withUnsafeMutableBufferPointer { output in
                        for y in 0..<size.height {
                            for x in 0..<width { sums[x] = .zero }
                            let start = weights.starts[y]
                            for tap in 0..<taps {
                                let weight = kernel[y * taps + tap]
                                if weight == 0 { continue }
                                let row = (start + tap) * width
                                for x in 0..<width { sums[x] += input[row + x] * weight }
                            }
                            let outputRow = y * width * 4
                            for x in 0..<width {
                                storeStraight(sums[x], into: output, at: outputRow + x * 4)
                            }
                        }
                    }
                }
            }
        }
        return result
    }

    /// Writes one premultiplied pixel as straight-alpha bytes.
    @inline(__always)
    private static func storeStraight(
        _ pixel: SIMD4<Float>, into output: UnsafeMutableBufferPointer<UInt8>, at offset: Int
    ) {
        let alpha = pixel.w
        // A pixel whose alpha rounds to zero is invisible; its colour would only be amplified noise.
        guard alpha >= 0.5 else { return }  // the output starts zeroed
        let scale = 255 / alpha
        // Values are clamped to 0...255 first, so adding 0.5 and truncating rounds to nearest
        // (much cheaper than the generic SIMD clamping and rounding, which do not inline here).
        output[offset] = UInt8(min(max(pixel.x * scale, 0), 255) + 0.5)
        output[offset + 1] = UInt8(min(max(pixel.y * scale, 0), 255) + 0.5)
        output[offset + 2] = UInt8(min(max(pixel.z * scale, 0), 255) + 0.5)
        output[offset + 3] = UInt8(min(alpha, 255) + 0.5)
    }
}
