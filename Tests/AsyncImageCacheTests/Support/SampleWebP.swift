#if canImport(CWebPEncode)
import CWebPEncode
import Foundation

@testable import AsyncImageCache

/// WebP files made by the tests with libwebp's own encoder, at sizes the fixtures do not reach.
extension SampleImages {
    /// `bitmap` encoded lossy at `quality` (0 to 100), or losslessly when `quality` is `nil`. A bitmap with
    /// alpha below 255 anywhere keeps it (lossy: in an ALPH chunk).
    static func webp(_ bitmap: Bitmap, quality: Float? = 80) -> Data {
        var output: UnsafeMutablePointer<UInt8>?
        let count = bitmap.pixels.withUnsafeBufferPointer { pixels in
            let (width, height, stride) = (Int32(bitmap.width), Int32(bitmap.height), Int32(bitmap.width * 4))
            if let quality {
                return WebPEncodeRGBA(pixels.baseAddress, width, height, stride, quality, &output)
            }
            return WebPEncodeLosslessRGBA(pixels.baseAddress, width, height, stride, &output)
        }
        defer { WebPFree(output) }
        precondition(count > 0, "libwebp could not encode a \(bitmap.width)x\(bitmap.height) bitmap")
        return Data(bytes: output!, count: count)
    }

    /// A `width` x `height` picture of coarse noise, a random 64x64 tile scaled up 4 times and repeated (with
    /// random alpha too when `alpha` is set): detail that compresses about as little as a photo's, so its
    /// files are large, made without drawing every pixel one by one (slow in a debug build).
    static func detailed(width: Int, height: Int, alpha: Bool = false) -> Bitmap {
        var generator = SeededGenerator(seed: 77)
        let tile = Bitmap(
            width: 64, height: 64,
            pixels: generator.bytes(64 * 64 * 4).enumerated().map {
                $0.offset % 4 == 3 ? (alpha ? $0.element : 255) : $0.element
            }
        ).resized(to: PixelSize(width: 256, height: 256))
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 4)
        for y in 0..<height {
            let row = tile.pixels[(y % 256) * 1024..<(y % 256 + 1) * 1024]
            for x in stride(from: 0, to: width, by: 256) { pixels += row.prefix(min(256, width - x) * 4) }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }
}
#endif

extension SampleImages {
    /// A WebP of `chunks` (the RIFF body after "WEBP", chunks already framed) followed by an EXIF chunk that
    /// holds a TIFF structure saying orientation 6 but declares `missingBytes` more than it holds. The RIFF
    /// size counts the bytes there are, or with `riffCountsMissingBytes` the ones declared too.
    static func webp(chunks: [UInt8], thenExifMissing missingBytes: Int, riffCountsMissingBytes: Bool) -> Data {
        let exif = SyntheticHeaders.tiff(orientation: 6, bigEndian: false)
        let body = ByteWriter.build { body in
            body.append(chunks)
            body.ascii("EXIF")
            body.uint32(exif.count + missingBytes, bigEndian: false)
            body.append(exif)
        }
        let file = ByteWriter.build { riff in
            riff.ascii("RIFF")
            riff.uint32(4 + body.count + (riffCountsMissingBytes ? missingBytes : 0), bigEndian: false)
            riff.ascii("WEBP")
            riff.append(body)
        }
        return Data(file)
    }
}
