import Foundation

@testable import AsyncImageCache

extension Bitmap {
    /// The peak signal-to-noise ratio in dB of this bitmap's colour against `reference`, over the
    /// red, green and blue samples of the pixels that are opaque in both; `.infinity` when they are equal.
    ///
    /// Translucent pixels are left out: their colour is weighted by alpha when drawn, so an error
    /// there is not what a viewer sees. The alpha channel has its own measure, ``alphaPSNR(against:)``.
    func colorPSNR(against reference: Bitmap) -> Double {
        precondition(pixelSize == reference.pixelSize, "\(pixelSize) vs \(reference.pixelSize)")
        var squaredError = 0.0
        var samples = 0
        for offset in stride(from: 0, to: pixels.count, by: 4)
        where pixels[offset + 3] == 255 && reference.pixels[offset + 3] == 255 {
            for channel in 0..<3 {
                let difference = Double(pixels[offset + channel]) - Double(reference.pixels[offset + channel])
                squaredError += difference * difference
            }
            samples += 3
        }
        precondition(samples > 0, "no pixel is opaque in both bitmaps")
        return Self.psnr(meanSquaredError: squaredError / Double(samples))
    }

    /// The peak signal-to-noise ratio in dB of this bitmap's alpha channel against `reference`'s.
    func alphaPSNR(against reference: Bitmap) -> Double {
        precondition(pixelSize == reference.pixelSize, "\(pixelSize) vs \(reference.pixelSize)")
        var squaredError = 0.0
        for offset in stride(from: 3, to: pixels.count, by: 4) {
            let difference = Double(pixels[offset]) - Double(reference.pixels[offset])
            squaredError += difference * difference
        }
        return Self.psnr(meanSquaredError: squaredError / Double(width * height))
    }

    private static func psnr(meanSquaredError: Double) -> Double {
        meanSquaredError == 0 ? .infinity : 10 * log10(255 * 255 / meanSquaredError)
    }
}
