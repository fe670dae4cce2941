extension Bitmap {
    /// Creates a bitmap from 8-bit RGBA whose colour is premultiplied by alpha, as Core Graphics bitmap
    /// contexts hold it, converting to straight alpha.
    ///
    /// Each colour sample becomes `sample * 255 / alpha`, rounded and clamped to 255; a pixel with alpha 0
    /// becomes `(0, 0, 0, 0)`. Opaque pixels are unchanged.
    init(width: Int, height: Int, premultipliedPixels: [UInt8]) {
        var pixels = premultipliedPixels
        for offset in stride(from: 0, to: pixels.count, by: 4) {
            let alpha = Int(pixels[offset + 3])
            if alpha == 255 { continue }
            for channel in offset..<offset + 3 {
                pixels[channel] = alpha == 0 ? 0 : UInt8(min(255, (Int(pixels[channel]) * 255 + alpha / 2) / alpha))
            }
        }
        self.init(width: width, height: height, pixels: pixels)
    }

    /// The pixels with each colour sample multiplied by alpha (`sample * alpha / 255`, rounded), the
    /// layout Core Graphics draws without converting.
    var premultipliedPixels: [UInt8] {
        var result = pixels
        for offset in stride(from: 0, to: result.count, by: 4) {
            let alpha = Int(result[offset + 3])
            if alpha == 255 { continue }
            for channel in offset..<offset + 3 {
                result[channel] = UInt8((Int(result[channel]) * alpha + 127) / 255)
            }
        }
        return result
    }

    /// Whether every pixel has alpha 255, so the image can be drawn without blending.
    var isOpaque: Bool {
        stride(from: 3, to: pixels.count, by: 4).allSatisfy { pixels[$0] == 255 }
    }
}
