extension Bitmap {
    /// The bitmap turned upright according to `orientation`.
    ///
    /// For orientations 5 to 8 the result's width and height are exchanged: a 1800x1200 bitmap
    /// tagged ``ImageOrientation/right`` becomes 1200x1800, turned 90 degrees clockwise.
    public func oriented(_ orientation: ImageOrientation) -> Bitmap {
        guard orientation != .up else { return self }
        let (width, height) = (self.width, self.height)
        // Output pixel (x, y) comes from source pixel origin + x * stepX + y * stepY (in pixels).
        let (origin, stepX, stepY): (Int, Int, Int)
        switch orientation {
        case .up: (origin, stepX, stepY) = (0, 1, width)
        case .upMirrored: (origin, stepX, stepY) = (width - 1, -1, width)
        case .down: (origin, stepX, stepY) = (height * width - 1, -1, -width)
        case .downMirrored: (origin, stepX, stepY) = ((height - 1) * width, 1, -width)
        case .leftMirrored: (origin, stepX, stepY) = (0, width, 1)
        case .right: (origin, stepX, stepY) = ((height - 1) * width, -width, 1)
        case .rightMirrored: (origin, stepX, stepY) = (height * width - 1, -width, -1)
        case .left: (origin, stepX, stepY) = (width - 1, width, -1)
        }
        let output = orientation.displaySize(ofStored: pixelSize)
        let result = [UInt8](unsafeUninitializedCapacity: pixels.count) { buffer, initialized in
            pixels.withUnsafeBytes { source in
                let target = UnsafeMutableRawBufferPointer(buffer)
                var targetOffset = 0
                for y in 0..<output.height {
                    var sourcePixel = origin + y * stepY
                    for _ in 0..<output.width {
                        // One 32-bit move per RGBA pixel.
                        let value = source.loadUnaligned(fromByteOffset: sourcePixel * 4, as: UInt32.self)
                        target.storeBytes(of: value, toByteOffset: targetOffset, as: UInt32.self)
                        targetOffset += 4
                        sourcePixel += stepX
                    }
                }
            }
            initialized = pixels.count
        }
        return Bitmap(width: output.width, height: output.height, pixels: result)
    }
}
