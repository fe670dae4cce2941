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
    /// A metadata chunk that a test WebP puts after its image data: its name, what it holds, and how many bytes
    /// more than that its size declares.
    struct WebPMetadataChunk {
        var name: String
        var payload: [UInt8]
        var missingBytes = 0

        /// An EXIF chunk holding a TIFF structure that says orientation 6.
        static func exif(missingBytes: Int = 0) -> Self {
            Self(
                name: "EXIF", payload: SyntheticHeaders.tiff(orientation: 6, bigEndian: false),
                missingBytes: missingBytes)
        }

        /// An XMP chunk holding a packet that says orientation 6 too, which no reader here looks at.
        static func xmp(missingBytes: Int = 0) -> Self {
            let packet = """
                <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\
                <rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="6"/></rdf:RDF></x:xmpmeta>
                """
            return Self(name: "XMP ", payload: Array(packet.utf8), missingBytes: missingBytes)
        }
    }

    /// A WebP of `chunks` (the RIFF body after "WEBP", chunks already framed) followed by the `metadata` chunks,
    /// a whole one padded to an even length. The RIFF size counts the bytes there are, or with
    /// `riffCountsMissingBytes` the ones the chunks declare and do not hold too.
    static func webp(chunks: [UInt8], then metadata: [WebPMetadataChunk], riffCountsMissingBytes: Bool) -> Data {
        let body = ByteWriter.build { body in
            body.append(chunks)
            for chunk in metadata {
                body.ascii(chunk.name)
                body.uint32(chunk.payload.count + chunk.missingBytes, bigEndian: false)
                body.append(chunk.payload)
                if chunk.missingBytes == 0, chunk.payload.count % 2 == 1 { body.append([0]) }
            }
        }
        let missingBytes = riffCountsMissingBytes ? metadata.reduce(0) { $0 + $1.missingBytes } : 0
        let file = ByteWriter.build { riff in
            riff.ascii("RIFF")
            riff.uint32(4 + body.count + missingBytes, bigEndian: false)
            riff.ascii("WEBP")
            riff.append(body)
        }
        return Data(file)
    }
}
