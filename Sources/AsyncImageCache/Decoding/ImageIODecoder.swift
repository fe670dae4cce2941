#if canImport(ImageIO)
import CoreGraphics
import Foundation
import ImageIO

extension ImageDecoders {
    /// Decodes with ImageIO on Apple platforms: every format the system reads (JPEG, PNG, GIF, WebP, HEIF,
    /// AVIF, BMP), at the smallest size that covers the one asked for.
    ///
    /// The result has the layout every portable decoder returns, 8-bit RGBA with straight alpha in stored
    /// orientation, so the store orients, resizes and rounds it with the same portable code on every
    /// platform; its colours are already converted to sRGB (the store converts an embedded profile itself
    /// only for the Linux decoders, which return samples as stored). This type only calls ImageIO and
    /// Core Graphics; the size arithmetic and the alpha conversion are portable and tested on Linux.
    ///
    /// ```swift
    /// let context = ImageDecodingContext(header: header, minimumSize: PixelSize(width: 300, height: 225))
    /// let bitmap = try ImageDecoders.ImageIO().decode(data, context: context)
    /// ```
    ///
    /// Errors: data ImageIO cannot open or decode throws `.corrupt`, data that ends early `.truncated`, a
    /// format it does not know `.unsupportedFormat`; a bitmap past ``ImageDecodingContext/pixelBudget`` is
    /// refused from the header's size, before ImageIO decodes anything.
    public struct ImageIO: ImageDecoding {
        /// Creates an ImageIO decoder.
        public init() {}

        /// Decodes the primary image of `data` (the first one, except in an HEIF or AVIF file whose primary
        /// item is not the first of its images) at the smallest size that covers `context.minimumSize`.
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            let format = context.header.format
            let size = context.coveringSize
            // A JPEG of one scan decodes at a reduced scale; a progressive one, and other formats, hold
            // their full size (see `imageIODecodedPixels(of:)`).
            try context.checkBudget(context.imageIODecodedPixels(of: data), format: format)

            guard let source = CGImageSourceCreateWithData(data as CFData, nil) else {
                throw ImageDecodingError(format: format, reason: .corrupt("ImageIO cannot open the data"))
            }
            try Self.check(CGImageSourceGetStatus(source), format: format)
            // The image the header describes, and the one the Linux decoders decode: in an HEIF or AVIF file
            // its primary item, which need not be the first of the file's images (index 0).
            let index = CGImageSourceGetPrimaryImageIndex(source)
            guard index >= 0, index < CGImageSourceGetCount(source) else {
                throw ImageDecodingError(format: format, reason: .corrupt("no image in the data"))
            }
            var options: [CFString: Any] = [
                kCGImageSourceCreateThumbnailFromImageAlways: true,
                // Stored orientation: the store applies EXIF orientation itself, the same way on every platform.
                kCGImageSourceCreateThumbnailWithTransform: false,
                kCGImageSourceShouldCacheImmediately: true,
            ]
            if size != context.header.storedSize {
                options[kCGImageSourceThumbnailMaxPixelSize] = max(size.width, size.height)
            }
            guard let image = CGImageSourceCreateThumbnailAtIndex(source, index, options as CFDictionary) else {
                try Self.check(CGImageSourceGetStatusAtIndex(source, index), format: format)
                throw ImageDecodingError(format: format, reason: .corrupt("ImageIO cannot decode the image"))
            }
            try Self.check(CGImageSourceGetStatusAtIndex(source, index), format: format)
            // The header and ImageIO could disagree on the size; the bitmap allocated here is checked too.
            try context.checkBudget(image.width * image.height, format: format)
            guard let bitmap = Self.bitmap(from: image) else {
                throw ImageDecodingError(format: format, reason: .corrupt("cannot draw the decoded image"))
            }
            return bitmap
        }

        /// Draws `image` into premultiplied sRGB RGBA (the only 8-bit RGBA layout a bitmap context takes),
        /// then converts to the straight alpha of ``Bitmap``.
        private static func bitmap(from image: CGImage) -> Bitmap? {
            let (width, height) = (image.width, image.height)
            guard width > 0, height > 0, let space = CGColorSpace(name: CGColorSpace.sRGB) else { return nil }
            var pixels = [UInt8](repeating: 0, count: width * height * 4)
            let drawn = pixels.withUnsafeMutableBytes { buffer -> Bool in
                guard
                    let context = CGContext(
                        data: buffer.baseAddress, width: width, height: height, bitsPerComponent: 8,
                        bytesPerRow: width * 4, space: space, bitmapInfo: CGImageAlphaInfo.premultipliedLast.rawValue)
                else { return false }
                // Replace rather than blend: transparent source pixels stay (0, 0, 0, 0).
                context.setBlendMode(.copy)
                context.draw(image, in: CGRect(x: 0, y: 0, width: width, height: height))
                return true
            }
            guard drawn else { return nil }
            return Bitmap(width: width, height: height, premultipliedPixels: pixels)
        }

        /// Throws for every status but complete.
        private static func check(_ status: CGImageSourceStatus, format: ImageFormat) throws(ImageDecodingError) {
            switch status {
            case .statusComplete:
                return
            case .statusUnexpectedEOF, .statusIncomplete, .statusReadingHeader:
                throw ImageDecodingError(format: format, reason: .truncated)
            case .statusUnknownType:
                throw ImageDecodingError(format: format, reason: .unsupportedFormat)
            case .statusInvalidData:
                throw ImageDecodingError(format: format, reason: .corrupt("ImageIO: invalid data"))
            @unknown default:
                throw ImageDecodingError(format: format, reason: .corrupt("ImageIO status \(status.rawValue)"))
            }
        }
    }
}
#endif
