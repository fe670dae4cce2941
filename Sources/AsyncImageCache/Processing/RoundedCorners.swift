extension Bitmap {
    /// The bitmap with anti-aliased rounded corners of `radius` pixels.
    ///
    /// The radius is clamped to half the shorter side, so a large radius on a square gives a circle.
    /// Each pixel's alpha is multiplied by the fraction of its area inside the rounded rectangle,
    /// measured with 4x4 samples on the pixels the arc crosses; pixels wholly outside the arcs become
    /// fully transparent. A radius of 0 or less returns the bitmap unchanged.
    public func roundingCorners(radius: Int) -> Bitmap {
        let radius = min(radius, min(width, height) / 2)
        guard radius > 0 else { return self }
        let coverage = Self.cornerCoverage(radius: radius)
        var result = pixels
        result.withUnsafeMutableBufferPointer { pixels in
            for cornerY in 0..<radius {
                for cornerX in 0..<radius {
                    let fraction = coverage[cornerY * radius + cornerX]
                    guard fraction < 1 else { continue }
                    // The same coverage, mirrored into each of the four corners.
                    for (x, y) in [
                        (cornerX, cornerY), (width - 1 - cornerX, cornerY),
                        (cornerX, height - 1 - cornerY), (width - 1 - cornerX, height - 1 - cornerY),
                    ] {
                        let alpha = (y * width + x) * 4 + 3
                        pixels[alpha] = UInt8((Float(pixels[alpha]) * fraction).rounded())
                    }
                }
            }
        }
        return Bitmap(width: width, height: height, pixels: result)
    }

    /// The covered fraction of each pixel of the top-left `radius` x `radius` square, row by row,
    /// for a quarter circle centred on the square's bottom-right corner.
    private static func cornerCoverage(radius: Int) -> [Float] {
        let center = Float(radius)
        let radiusSquared = center * center
        let samplesPerSide = 4
        var coverage = [Float](repeating: 1, count: radius * radius)
        for y in 0..<radius {
            for x in 0..<radius {
                // The pixel's nearest and farthest points from the centre decide the easy cases.
                let nearX = center - Float(x + 1)
                let nearY = center - Float(y + 1)
                let farX = center - Float(x)
                let farY = center - Float(y)
                if farX * farX + farY * farY <= radiusSquared { continue }
                if nearX * nearX + nearY * nearY >= radiusSquared {
                    coverage[y * radius + x] = 0
                    continue
                }
                var inside = 0
                for sampleY in 0..<samplesPerSide {
                    for sampleX in 0..<samplesPerSide {
                        let dx = center - (Float(x) + (Float(sampleX) + 0.5) / Float(samplesPerSide))
                        let dy = center - (Float(y) + (Float(sampleY) + 0.5) / Float(samplesPerSide))
                        if dx * dx + dy * dy <= radiusSquared { inside += 1 }
                    }
                }
                coverage[y * radius + x] = Float(inside) / Float(samplesPerSide * samplesPerSide)
            }
        }
        return coverage
    }
}
