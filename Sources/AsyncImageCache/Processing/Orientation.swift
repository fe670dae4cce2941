extension Bitmap {
    /// The bitmap turned upright according to `orientation`.
    ///
    /// For orientations 5 to 8 the result's width and height are exchanged: a 1800x1200 bitmap
    /// tagged ``ImageOrientation/right`` becomes 1200x1800, turned 90 degrees clockwise.
    public func oriented(_ orientation: ImageOrientation) -> Bitmap {
        guard orientation != .up else { return self }
        let width = self.width
        // Output pixel (x, y) comes from source pixel origin + x * stepX + y * stepY (in pixels): the mapping
        // is linear, so three of its points give the origin and the two steps.
        func index(_ position: (x: Int, y: Int)) -> Int { position.y * width + position.x }
        let origin = index(orientation.storedPosition(ofDisplayed: 0, 0, in: pixelSize))
        let stepX = index(orientation.storedPosition(ofDisplayed: 1, 0, in: pixelSize)) - origin
        let stepY = index(orientation.storedPosition(ofDisplayed: 0, 1, in: pixelSize)) - origin
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
