import Foundation

/// Image headers built byte by byte from the format specifications, for cases the corpus lacks.
enum SyntheticHeaders {
    /// A TIFF structure whose IFD0 holds an image width entry and then the orientation entry, of `fieldType`
    /// and `count` values (the specification's SHORT and 1 by default; the value field holds one either way).
    static func tiff(orientation: Int, bigEndian: Bool, fieldType: Int = 3, count: Int = 1) -> [UInt8] {
        ByteWriter.build { tiff in
            tiff.ascii(bigEndian ? "MM" : "II")
            tiff.uint16(42, bigEndian: bigEndian)
            tiff.uint32(8, bigEndian: bigEndian)  // IFD0 right after the header
            tiff.uint16(2, bigEndian: bigEndian)  // two entries
            tiff.uint16(0x0100, bigEndian: bigEndian)  // ImageWidth, LONG, 1, 640
            tiff.uint16(4, bigEndian: bigEndian)
            tiff.uint32(1, bigEndian: bigEndian)
            tiff.uint32(640, bigEndian: bigEndian)
            tiff.uint16(0x0112, bigEndian: bigEndian)  // Orientation, SHORT, 1, value left-aligned
            tiff.uint16(fieldType, bigEndian: bigEndian)
            tiff.uint32(count, bigEndian: bigEndian)
            tiff.uint16(orientation, bigEndian: bigEndian)
            tiff.uint16(0, bigEndian: bigEndian)
            tiff.uint32(0, bigEndian: bigEndian)  // no IFD1
        }
    }

    /// SOI, an optional EXIF APP1, a JFIF APP0, fill bytes, a frame header and the start of a scan.
    /// With `exifAfterFrameHeader` the APP1 comes after the frame header instead; `exifPadding` zero
    /// bytes follow the TIFF structure inside it (an EXIF thumbnail's room).
    static func jpeg(
        width: Int, height: Int, exif: [UInt8]? = nil, frameMarker: UInt8 = 0xC0, fillBytes: Int = 0,
        exifAfterFrameHeader: Bool = false, exifPadding: Int = 0
    ) -> Data {
        Data(
            ByteWriter.build { jpeg in
                func appendExif() {
                    guard let exif else { return }
                    jpeg.append([0xFF, 0xE1])
                    jpeg.uint16(2 + 6 + exif.count + exifPadding, bigEndian: true)
                    jpeg.ascii("Exif")
                    jpeg.append([0, 0] + exif + [UInt8](repeating: 0, count: exifPadding))
                }
                jpeg.append([0xFF, 0xD8])
                if !exifAfterFrameHeader { appendExif() }
                jpeg.append([0xFF, 0xE0, 0x00, 0x10])
                jpeg.ascii("JFIF")
                jpeg.append([0, 1, 1, 0, 0, 1, 0, 1, 0, 0])
                jpeg.append([UInt8](repeating: 0xFF, count: fillBytes))
                jpeg.append([0xFF, frameMarker])
                jpeg.uint16(17, bigEndian: true)
                jpeg.append([8])
                jpeg.uint16(height, bigEndian: true)
                jpeg.uint16(width, bigEndian: true)
                jpeg.append([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])
                if exifAfterFrameHeader { appendExif() }
                jpeg.append([0xFF, 0xDA, 0x00, 0x0C, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3F, 0])
            })
    }

    /// A PNG chunk with its CRC, so that libpng reads it too (the header reader does not check CRCs).
    static func pngChunk(_ type: String, _ content: [UInt8]) -> [UInt8] {
        ByteWriter.build { chunk in
            chunk.uint32(content.count, bigEndian: true)
            chunk.ascii(type)
            chunk.append(content)
            chunk.uint32(Int(CRC32.checksum(Array(type.utf8) + content)), bigEndian: true)
        }
    }

    /// Signature, IHDR (8-bit RGBA), a text chunk, an optional eXIf chunk, then an IDAT with an empty
    /// zlib stream, far too short for the declared size.
    static func png(width: Int, height: Int, exif: [UInt8]? = nil) -> Data {
        var ihdr = ByteWriter()
        ihdr.uint32(width, bigEndian: true)
        ihdr.uint32(height, bigEndian: true)
        ihdr.append([8, 6, 0, 0, 0])
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + pngChunk("IHDR", ihdr.bytes)
        bytes += pngChunk("tEXt", Array("Comment\0made by a test".utf8))
        if let exif { bytes += pngChunk("eXIf", exif) }
        return Data(bytes + pngChunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + pngChunk("IEND", []))
    }

    /// A BMP file header and a BITMAPCOREHEADER (12 bytes) or BITMAPINFOHEADER (40 bytes).
    static func bmp(width: Int, height: Int, core: Bool) -> Data {
        Data(
            ByteWriter.build { bmp in
                bmp.ascii("BM")
                bmp.uint32(14 + (core ? 12 : 40) + 4, bigEndian: false)  // file size: one 1x1 pixel row
                bmp.uint32(0, bigEndian: false)
                bmp.uint32(14 + (core ? 12 : 40), bigEndian: false)  // pixel data offset
                bmp.uint32(core ? 12 : 40, bigEndian: false)
                if core {
                    bmp.uint16(width, bigEndian: false)
                    bmp.uint16(height, bigEndian: false)
                    bmp.uint16(1, bigEndian: false)
                    bmp.uint16(24, bigEndian: false)
                } else {
                    bmp.uint32(width, bigEndian: false)
                    bmp.uint32(height, bigEndian: false)  // two's complement when negative
                    bmp.uint16(1, bigEndian: false)
                    bmp.uint16(24, bigEndian: false)
                    bmp.append([UInt8](repeating: 0, count: 24))
                }
                bmp.append([0, 0, 0, 0])
            })
    }
}
