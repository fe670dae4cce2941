import AsyncImageCache
import Foundation

/// The demo's built-in images, made on the spot: several sizes and formats, one with an EXIF
/// orientation, one large photo.
struct SampleSet {
    struct Item {
        let name: String
        let data: Data
        let note: String
    }

    let items: [Item]

    static func make() throws -> SampleSet {
        func photo(_ width: Int, _ height: Int, seed: Int) -> Bitmap {
            var pixels = [UInt8](repeating: 255, count: width * height * 4)
            for y in 0..<height {
                for x in 0..<width {
                    let offset = (y * width + x) * 4
                    let wave = (x / 40 + y / 40 + seed) % 2 == 0 ? 0 : 40
                    pixels[offset] = UInt8(clamping: x * 215 / width + wave)
                    pixels[offset + 1] = UInt8(clamping: y * 215 / height + wave)
                    pixels[offset + 2] = UInt8(clamping: (seed * 60 + (x + y) / 8) % 256)
                }
            }
            return Bitmap(width: width, height: height, pixels: pixels)
        }
        func badge(_ side: Int) -> Bitmap {
            var pixels = [UInt8](repeating: 0, count: side * side * 4)
            let center = Double(side) / 2
            for y in 0..<side {
                for x in 0..<side {
                    let distance =
                        ((Double(x) + 0.5 - center) * (Double(x) + 0.5 - center) + (Double(y) + 0.5 - center)
                            * (Double(y) + 0.5 - center))
                        .squareRoot()
                    guard distance < center - 2 else { continue }
                    let offset = (y * side + x) * 4
                    pixels[offset] = 230
                    pixels[offset + 1] = 120
                    pixels[offset + 2] = 40
                    pixels[offset + 3] = 255
                }
            }
            return Bitmap(width: side, height: side, pixels: pixels)
        }
        let jpeg = ImageEncoders.JPEG(quality: 88)
        let png = ImageEncoders.PNG()
        // Stored as portrait pixels, displayed as landscape: EXIF orientation 6.
        let rotated = try withEXIFOrientation(6, jpeg.encode(photo(600, 900, seed: 3)))
        return SampleSet(items: [
            Item(name: "photo-large.jpg", data: try jpeg.encode(photo(4000, 3000, seed: 0)), note: "large photo"),
            Item(name: "photo.jpg", data: try jpeg.encode(photo(2400, 1600, seed: 1)), note: "photo"),
            Item(name: "gradient.jpg", data: try jpeg.encode(photo(1024, 768, seed: 2)), note: "1024x768"),
            Item(name: "rotated.jpg", data: rotated, note: "EXIF orientation 6"),
            Item(name: "avatar.jpg", data: try jpeg.encode(photo(460, 460, seed: 4)), note: "avatar"),
            Item(name: "badge.png", data: try png.encode(badge(256)), note: "PNG with alpha"),
        ])
    }

    /// `jpeg` with an EXIF APP1 segment carrying `orientation` inserted after its SOI marker.
    static func withEXIFOrientation(_ orientation: UInt16, _ jpeg: Data) -> Data {
        // Big-endian TIFF: header, one IFD entry (0x0112, SHORT, count 1, value), no next IFD.
        let tiff: [UInt8] = [
            0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1,
            UInt8(orientation >> 8), UInt8(orientation & 0xff), 0, 0, 0, 0, 0, 0,
        ]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xff)] + payload
        var result = Data(jpeg.prefix(2))
        result.append(contentsOf: segment)
        result.append(jpeg.dropFirst(2))
        return result
    }
}
