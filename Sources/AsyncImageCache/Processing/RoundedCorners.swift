extension Bitmap {
    /// The radius corners asked to be `radius` pixels round are cut with on an image `width` x `height`
    /// pixels: clamped to half the shorter side.
    static func cutRadius(_ radius: Double, width: Double, height: Double) -> Double {
        min(radius, min(width, height) / 2)
    }

    /// The bitmap with anti-aliased rounded corners of `radius` pixels.
    ///
    /// The radius is clamped to half the shorter side, so a large radius on a square gives a circle
    /// (half an odd side ends in half a pixel: a 21x21 bitmap's circle has a radius of 10.5).
    /// Each pixel's alpha is multiplied by the fraction of its area inside the rounded rectangle,
    /// measured with 4x4 samples on the pixels the arc crosses; pixels wholly outside the arcs become
    /// fully transparent. A radius of 0 or less returns the bitmap unchanged.
    public func roundingCorners(radius: Int) -> Bitmap {
        let radius = Self.cutRadius(Double(radius), width: Double(width), height: Double(height))
        guard radius > 0 else { return self }
        // The corner squares: on an odd side clamped to half, they share the middle column or row.
        let side = Int(radius.rounded(.up))
        let coverage = cornerCoverage(radius: Float(radius), side: side)
        var result = pixels
        result.withUnsafeMutableBufferPointer { pixels in
            for cornerY in 0..<side {
                for cornerX in 0..<side {
                    let fraction = coverage[cornerY * side + cornerX]
                    guard fraction < 1 else { continue }
                    // The same coverage, mirrored into each of the four corners; a pixel of a shared middle
                    // column or row is its own mirror, and is covered once. (Written out, not looped over
                    // arrays of the mirrors: those cost allocations per pixel, several times the work.)
                    func cover(_ x: Int, _ y: Int) {
                        let alpha = (y * width + x) * 4 + 3
                        pixels[alpha] = UInt8((Float(pixels[alpha]) * fraction).rounded())
                    }
                    let (mirroredX, mirroredY) = (width - 1 - cornerX, height - 1 - cornerY)
                    cover(cornerX, cornerY)
                    if mirroredX != cornerX { cover(mirroredX, cornerY) }
                    if mirroredY != cornerY {
                        cover(cornerX, mirroredY)
                        if mirroredX != cornerX { cover(mirroredX, mirroredY) }
                    }
                }
            }
        }
        return Bitmap(width: width, height: height, pixels: result)
    }

    /// The covered fraction of each pixel of the top-left `side` x `side` square, row by row, for a
    /// rounded rectangle of this bitmap's size whose arcs have `radius`: a point's distance along each
    /// axis from the straight part of the edges (which starts `radius` in from either end) decides.
    private func cornerCoverage(radius: Float, side: Int) -> [Float] {
        let radiusSquared = radius * radius
        let samplesPerSide = 4
        // How far `position` lies beyond the straight part of an axis `extent` pixels long.
        func beyond(_ position: Float, _ extent: Int) -> Float {
            max(radius - position, position - (Float(extent) - radius), 0)
        }
        var coverage = [Float](repeating: 1, count: side * side)
        // The pixel's nearest and farthest points decide the easy cases; its nearest point is on the straight
        // part along an axis where the pixel reaches it (an odd side's middle pixel). Each axis's, once.
        let nearest = (0..<side).map { max(0, radius - Float($0 + 1)) }
        let farthestX = (0..<side).map { max(beyond(Float($0), width), beyond(Float($0 + 1), width)) }
        let farthestY = (0..<side).map { max(beyond(Float($0), height), beyond(Float($0 + 1), height)) }
        for y in 0..<side {
            let (nearY, farY) = (nearest[y], farthestY[y])
            for x in 0..<side {
                let (nearX, farX) = (nearest[x], farthestX[x])
                if farX * farX + farY * farY <= radiusSquared { continue }
                if nearX * nearX + nearY * nearY >= radiusSquared {
                    coverage[y * side + x] = 0
                    continue
                }
                var inside = 0
                for sampleY in 0..<samplesPerSide {
                    for sampleX in 0..<samplesPerSide {
                        let dx = beyond(Float(x) + (Float(sampleX) + 0.5) / Float(samplesPerSide), width)
                        let dy = beyond(Float(y) + (Float(sampleY) + 0.5) / Float(samplesPerSide), height)
                        if dx * dx + dy * dy <= radiusSquared { inside += 1 }
                    }
                }
                coverage[y * side + x] = Float(inside) / Float(samplesPerSide * samplesPerSide)
            }
        }
        return coverage
    }
}
