import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct ImageHeaderRobustnessTests {
    /// Real and synthetic files with the header each must give once enough of it has arrived.
    static func samples() throws -> [(name: String, data: Data, header: ImageHeader)] {
        let exif = SyntheticHeaders.tiff(orientation: 3, bigEndian: false)
        return [
            (
                "Landscape_6.jpg", try Fixtures.data("exif-orientation", "Landscape_6.jpg"),
                ImageHeader(format: .jpeg, storedSize: PixelSize(width: 1200, height: 1800), orientation: .right)
            ),
            (
                // A prefix that ends inside the EXIF segment after the frame header is not yet the answer.
                "JPEG with EXIF after the frame header",
                SyntheticHeaders.jpeg(
                    width: 5, height: 3, exif: SyntheticHeaders.tiff(orientation: 6, bigEndian: true),
                    exifAfterFrameHeader: true),
                ImageHeader(format: .jpeg, storedSize: PixelSize(width: 5, height: 3), orientation: .right)
            ),
            (
                "beacon.gif", try Fixtures.data("gif", "beacon.gif"),
                ImageHeader(format: .gif, storedSize: PixelSize(width: 6, height: 6))
            ),
            (
                "test.webp", try Fixtures.data("webp", "test.webp"),
                ImageHeader(format: .webp, storedSize: PixelSize(width: 128, height: 128))
            ),
            (
                "yellow_rose.lossless.webp", try Fixtures.data("webp", "yellow_rose.lossless.webp"),
                ImageHeader(format: .webp, storedSize: PixelSize(width: 400, height: 301))
            ),
            (
                "anim.webp", try Fixtures.data("webp", "anim.webp"),
                ImageHeader(format: .webp, storedSize: PixelSize(width: 200, height: 200))
            ),
            (
                "VP8X with EXIF", SyntheticHeaders.webpExtended(width: 9, height: 4, exif: exif),
                ImageHeader(format: .webp, storedSize: PixelSize(width: 9, height: 4), orientation: .down)
            ),
            (
                "PNG with eXIf", SyntheticHeaders.png(width: 7, height: 5, exif: exif),
                ImageHeader(format: .png, storedSize: PixelSize(width: 7, height: 5), orientation: .down)
            ),
            (
                "BMP", SyntheticHeaders.bmp(width: 3, height: -2, core: false),
                ImageHeader(format: .bmp, storedSize: PixelSize(width: 3, height: 2))
            ),
            (
                "HEIF", ImageHeaderContainerTests.photo(majorBrand: "heic", compatibleBrands: ["mif1"]),
                ImageHeader(format: .heif, storedSize: PixelSize(width: 4000, height: 3000), orientation: .leftMirrored)
            ),
        ]
    }

    @Test func everyPrefixIsEitherTruncatedOrTheFullAnswer() throws {
        for sample in try Self.samples() {
            var answeredAt: Int?
            // Every length up to the first answer and a stretch after it, then the whole file.
            for length in Array(0...sample.data.count)
            where length <= (answeredAt ?? length) + 512 || length == sample.data.count {
                do {
                    let header = try ImageHeader.parse(sample.data.prefix(length))
                    #expect(header == sample.header, "\(sample.name) at \(length) bytes")
                    answeredAt = answeredAt ?? length
                } catch {
                    #expect(error.reason == .truncated, "\(sample.name) at \(length) bytes: \(error)")
                    #expect(answeredAt == nil, "\(sample.name) answered at \(answeredAt ?? 0) but not at \(length)")
                    // Once the signature is complete, the error names the format.
                    if length >= 12 { #expect(error.format == sample.header.format, "\(sample.name) at \(length)") }
                }
            }
            #expect(answeredAt != nil, "\(sample.name) never answered")
        }
    }

    @Test func unknownSignatureIsUnrecognised() {
        for bytes in [
            Array("hello, world".utf8), [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08],
            Array("RIFF....WAVE".utf8),
        ] {
            #expect(throws: ImageDecodingError(format: nil, reason: .unrecognizedFormat)) {
                try ImageHeader.parse(Data(bytes))
            }
        }
    }

    @Test func emptyDataIsTruncated() {
        #expect(throws: ImageDecodingError(format: nil, reason: .truncated)) { try ImageHeader.parse(Data()) }
    }

    @Test func absurdSizesAreCorrupt() {
        let huge = SyntheticHeaders.png(width: (1 << 30) + 1, height: 1)
        #expect { try ImageHeader.parse(huge) } throws: { error in
            guard let error = error as? ImageDecodingError, case .corrupt = error.reason else { return false }
            return error.format == .png
        }
    }

    @Test func randomBytesAfterASignatureGiveTypedErrorsOrPlausibleHeaders() {
        let signatures: [[UInt8]] = [
            [0xFF, 0xD8, 0xFF], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], Array("GIF89a".utf8),
            Array("RIFF".utf8) + [0x40, 0, 0, 0] + Array("WEBP".utf8), Array("BM".utf8),
            [0, 0, 0, 0x18] + Array("ftypheic".utf8), [0, 0, 0, 0x18] + Array("ftypmif1".utf8),
        ]
        var random = SeededGenerator(seed: 20_261_130)
        var (parsed, failed) = (0, 0)
        for signature in signatures {
            for _ in 0..<400 {
                let length = Int.random(in: 0...96, using: &random)
                let tail = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                do {
                    let header = try ImageHeader.parse(Data(signature + tail))
                    #expect(header.storedSize.width >= 1 && header.storedSize.width <= 1 << 30)
                    #expect(header.storedSize.height >= 1 && header.storedSize.height <= 1 << 30)
                    parsed += 1
                } catch {
                    // Reaching here without a crash is the point; the error says what it is.
                    #expect(!error.description.isEmpty)
                    failed += 1
                }
            }
        }
        // Both ways were taken: random tails mostly fail, and some (a GIF's or BMP's fixed fields) parse.
        #expect(parsed > 0 && failed > 0, "\(parsed) parsed, \(failed) failed")
    }

    @Test func flippedBytesInRealHeadersNeverCrash() throws {
        var random = SeededGenerator(seed: 7)
        var parsed = 0
        for sample in try Self.samples() {
            let head = [UInt8](sample.data.prefix(4096))
            for _ in 0..<300 {
                var bytes = head
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
                if let header = try? ImageHeader.parse(Data(bytes)) {
                    #expect(header.storedSize.pixelCount > 0)
                    parsed += 1
                }
            }
        }
        // Most flips land past the fields the size is read from: most still parse.
        #expect(parsed > 0)
    }
}
