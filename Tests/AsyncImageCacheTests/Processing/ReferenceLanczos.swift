import Foundation

@testable import AsyncImageCache

/// A deliberately plain Lanczos-3 resize in Double precision, to check the production one against.
///
/// It weighs every source sample for every target sample (no windows, no padding, no Float) and
/// filters the premultiplied image in two dimensions at once.
enum ReferenceLanczos {
    static func kernel(_ x: Double) -> Double {
        if x == 0 { return 1 }
        if abs(x) >= 3 { return 0 }
        return 3 * sin(Double.pi * x) * sin(Double.pi * x / 3) / (Double.pi * Double.pi * x * x)
    }

    /// Normalised weights of all `source` samples for each of `target` samples.
    static func weights(source: Int, target: Int) -> [[Double]] {
        let reduction = max(1, Double(source) / Double(target))
        return (0..<target).map { index in
            let center = (Double(index) + 0.5) * Double(source) / Double(target)
            let raw = (0..<source).map { kernel((Double($0) + 0.5 - center) / reduction) }
            let sum = raw.reduce(0, +)
            return raw.map { $0 / sum }
        }
    }

    static func resize(_ bitmap: Bitmap, to size: PixelSize) -> Bitmap {
        let columns = weights(source: bitmap.width, target: size.width)
        let rows = weights(source: bitmap.height, target: size.height)
        var premultiplied = [[Double]](repeating: [0, 0, 0, 0], count: bitmap.width * bitmap.height)
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let pixel = bitmap.pixel(x: x, y: y)
                let alpha = Double(pixel.alpha) / 255
                premultiplied[y * bitmap.width + x] =
                    [
                        Double(pixel.red) * alpha, Double(pixel.green) * alpha, Double(pixel.blue) * alpha,
                        Double(pixel.alpha),
                    ]
            }
        }
        var output: [UInt8] = []
        for ty in 0..<size.height {
            for tx in 0..<size.width {
                var sum = [0.0, 0, 0, 0]
                for sy in 0..<bitmap.height where rows[ty][sy] != 0 {
                    for sx in 0..<bitmap.width where columns[tx][sx] != 0 {
                        let weight = rows[ty][sy] * columns[tx][sx]
                        for channel in 0..<4 { sum[channel] += weight * premultiplied[sy * bitmap.width + sx][channel] }
                    }
                }
                let alpha = sum[3]
                let color = (0..<3).map { alpha > 0 ? sum[$0] * 255 / alpha : 0 }
                output += (color + [alpha]).map { UInt8(min(255, max(0, $0)).rounded()) }
            }
        }
        return Bitmap(width: size.width, height: size.height, pixels: output)
    }

    /// Peak signal-to-noise ratio between two bitmaps of the same size, over all four channels.
    static func psnr(_ a: Bitmap, _ b: Bitmap) -> Double {
        let squared = zip(a.pixels, b.pixels).reduce(0.0) { $0 + pow(Double($1.0) - Double($1.1), 2) }
        let mean = squared / Double(a.pixels.count)
        return mean == 0 ? .infinity : 10 * log10(255 * 255 / mean)
    }
}
