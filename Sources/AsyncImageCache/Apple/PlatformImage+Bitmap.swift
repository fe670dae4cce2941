#if canImport(UIKit) || canImport(AppKit)
import CoreGraphics

#if canImport(UIKit)
import UIKit
#else
import AppKit
#endif

extension Bitmap {
    /// The bitmap as an sRGB `CGImage` that Core Animation draws without converting: premultiplied
    /// alpha, or no alpha at all when every pixel is opaque.
    var cgImage: CGImage? {
        let opaque = isOpaque
        let bytes = opaque ? pixels : premultipliedPixels
        let alpha: CGImageAlphaInfo = opaque ? .noneSkipLast : .premultipliedLast
        guard let space = CGColorSpace(name: CGColorSpace.sRGB),
            let provider = CGDataProvider(data: Data(bytes) as CFData)
        else { return nil }
        return CGImage(
            width: width, height: height, bitsPerComponent: 8, bitsPerPixel: 32, bytesPerRow: bytesPerRow,
            space: space, bitmapInfo: CGBitmapInfo(rawValue: alpha.rawValue), provider: provider, decode: nil,
            shouldInterpolate: true, intent: .defaultIntent)
    }
}

#if canImport(UIKit)
extension UIImage {
    /// The image the store hands out for `bitmap`: one image pixel per point (scale 1), upright.
    static func make(from bitmap: Bitmap) -> UIImage {
        guard let cgImage = bitmap.cgImage else {
            // Only invalid parameters make CGImage fail, and a Bitmap's are valid by construction.
            assertionFailure("cannot make a CGImage from a \(bitmap.pixelSize) bitmap")
            return UIImage()
        }
        return UIImage(cgImage: cgImage)
    }

    /// The image's size in pixels as displayed, as ``Bitmap/pixelSize`` gives it on Linux: its size in
    /// points, which has its `imageOrientation` applied, times its scale. (Its `cgImage` is stored
    /// unrotated: a camera photo taken upright is wider than it is tall there.)
    public var pixelSize: PixelSize {
        PixelSize(width: Int((size.width * scale).rounded()), height: Int((size.height * scale).rounded()))
    }
}
#else
extension NSImage {
    /// The image the store hands out for `bitmap`: one image pixel per point.
    static func make(from bitmap: Bitmap) -> NSImage {
        guard let cgImage = bitmap.cgImage else {
            // Only invalid parameters make CGImage fail, and a Bitmap's are valid by construction.
            assertionFailure("cannot make a CGImage from a \(bitmap.pixelSize) bitmap")
            return NSImage(size: .zero)
        }
        return NSImage(cgImage: cgImage, size: NSSize(width: bitmap.width, height: bitmap.height))
    }

    /// The image's size in pixels, as ``Bitmap/pixelSize`` gives it on Linux: that of its largest
    /// representation, or its size in points when it has no bitmap representation.
    public var pixelSize: PixelSize {
        let largest = representations.max { $0.pixelsWide * $0.pixelsHigh < $1.pixelsWide * $1.pixelsHigh }
        if let largest, largest.pixelsWide > 0, largest.pixelsHigh > 0 {
            return PixelSize(width: largest.pixelsWide, height: largest.pixelsHigh)
        }
        return PixelSize(width: Int(size.width.rounded()), height: Int(size.height.rounded()))
    }
}
#endif
#endif
