/// An immutable bitmap of 8-bit RGBA pixels with straight (non-premultiplied) alpha.
///
/// On Linux this is the store's ``PlatformImage``. On Apple platforms the store uses it internally
/// for the portable processing steps and bridges the result to `UIImage` or `NSImage`.
///
/// Pixels are stored row after row, top to bottom, four bytes per pixel in the order red, green,
/// blue, alpha, with no padding between rows.
///
/// ```swift
/// let red = Bitmap(width: 2, height: 1, pixels: [255, 0, 0, 255, 255, 0, 0, 255])
/// print(red.pixelSize)   // 2x1
/// ```
public struct Bitmap: Hashable, Sendable {
    /// The number of pixel columns.
    public let width: Int
    /// The number of pixel rows.
    public let height: Int
    /// The pixels, `width * height * 4` bytes in RGBA order.
    public let pixels: [UInt8]

    /// Creates a bitmap from RGBA pixels.
    ///
    /// - Precondition: `width` and `height` are at least 1 and `pixels.count == width * height * 4`.
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width > 0 && height > 0, "a bitmap needs at least one pixel")
        precondition(pixels.count == width * height * 4, "expected \(width * height * 4) bytes, got \(pixels.count)")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The bitmap's size in pixels.
    public var pixelSize: PixelSize { PixelSize(width: width, height: height) }

    /// The number of bytes in one row, `width * 4`.
    public var bytesPerRow: Int { width * 4 }

    /// The memory the pixels take, `width * height * 4`: what the memory tier charges for it.
    public var byteCount: Int { pixels.count }

    /// The four components of the pixel at column `x`, row `y`, counted from the top left.
    public func pixel(x: Int, y: Int) -> (red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8) {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) is outside \(pixelSize)")
        let offset = (y * width + x) * 4
        return (pixels[offset], pixels[offset + 1], pixels[offset + 2], pixels[offset + 3])
    }

    /// Every pixel's alpha, row by row: one byte a pixel.
    var alphaChannel: [UInt8] { stride(from: 3, to: pixels.count, by: 4).map { pixels[$0] } }
}

extension Bitmap: CustomStringConvertible {
    /// The size, as `Bitmap(320x213)`: printing a bitmap (or a test failure that shows one) would
    /// otherwise list every byte of its pixels.
    public var description: String { "Bitmap(\(pixelSize))" }
}
