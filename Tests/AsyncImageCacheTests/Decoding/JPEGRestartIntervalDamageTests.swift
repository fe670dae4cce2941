#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Restart markers are JPEG's resilience: a damaged interval costs that band, and the decoder resumes
/// at the next marker. Data that ends early is something else (``JPEGDecoderTests``).
@Suite("JPEG restart interval damage")
struct JPEGRestartIntervalDamageTests {
    /// video-001.restart2.jpeg (150x103, 4:2:0, a restart every two MCU rows: rows 0-31, 32-63, 64-95,
    /// 96-102) with the second half of the third interval cut out, up to its RST marker: that interval
    /// runs out of bits at the marker, the others are whole, and the file ends with EOI.
    static func damaged() throws -> (whole: Data, damaged: Data) {
        let whole = try Fixtures.data("jpeg", "video-001.restart2.jpeg")
        let bytes = [UInt8](whole)
        let scan = try #require((0..<(bytes.count - 1)).last { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        let data = scan + 2 + Int(bytes[scan + 2]) << 8 + Int(bytes[scan + 3])
        let restarts = (data..<(bytes.count - 1)).filter { bytes[$0] == 0xFF && (0xD0...0xD7).contains(bytes[$0 + 1]) }
        try #require(restarts.count == 3)
        let middle = (restarts[1] + restarts[2]) / 2
        return (whole, Data(bytes[..<middle] + bytes[(restarts[2] - 2)...]))
    }

    @Test func aDamagedIntervalCostsItsBandNotTheImage() throws {
        let (whole, damaged) = try Self.damaged()
        let reference = try ImageDecoders.JPEG().decode(whole, context: decodingContext(.jpeg))
        // libjpeg warns "Corrupt JPEG data: premature end of data segment" and resumes at the next marker,
        // as djpeg and Pillow show it; this was refused as data that ends early (`.truncated`).
        let bitmap = try ImageDecoders.JPEG().decode(damaged, context: decodingContext(.jpeg))
        #expect(bitmap.pixelSize == PixelSize(width: 150, height: 103))
        let bytesPerRow = 150 * 4
        // The intervals before the damaged one, and the one after it, are the undamaged file's pixels
        // (one row each side of a band can differ: chroma is upsampled across it).
        #expect(bitmap.pixels[..<(62 * bytesPerRow)] == reference.pixels[..<(62 * bytesPerRow)])
        #expect(bitmap.pixels[(98 * bytesPerRow)...] == reference.pixels[(98 * bytesPerRow)...])
        #expect(
            bitmap.pixels[(70 * bytesPerRow)..<(90 * bytesPerRow)]
                != reference.pixels[(70 * bytesPerRow)..<(90 * bytesPerRow)])
    }

    /// testorig.jpg declaring 65500x4096 (as in ``JPEGTruncationStopsEarlyTests``) with a restart every
    /// 65535 MCUs and 64 restart markers after its scan data: each marker ends an interval whose data ran
    /// out, and libjpeg fills the rest of it with zeros, 65535 MCUs for two bytes. Resuming after every one
    /// would decode the whole declared image from a 5.7 KB file; the fill is capped, then it stops.
    /// Without a restart interval a marker is never read as a restart: libjpeg fills the rest of the
    /// scan, so it stops at once.
    @Test(arguments: [true, false], [true, false])
    func restartMarkersAloneDoNotDecodeAHugeDeclaredImage(overlapping: Bool, declaresInterval: Bool) throws {
        let huge = [UInt8](try JPEGTruncationStopsEarlyTests.declaringAHugeFrame(height: 4096))
        let scan = try #require((0..<(huge.count - 1)).first { huge[$0] == 0xFF && huge[$0 + 1] == 0xDA })
        let restartInterval: [UInt8] = [0xFF, 0xDD, 0x00, 0x04, 0xFF, 0xFF]
        let markers: [UInt8] = (0..<64).flatMap { (index: Int) -> [UInt8] in [0xFF, 0xD0 + UInt8(index % 8)] }
        var bytes = [UInt8](huge[..<scan])
        bytes += declaresInterval ? restartInterval : []
        bytes += huge[scan..<(huge.count - 2)]
        bytes += markers
        bytes += [0xFF, 0xD9]
        // One interval of fill covers 16 rows of MCUs, 32 rows at 1/8.
        try JPEGTruncationStopsEarlyTests.expectTruncatedEarly(Data(bytes), overlapping: overlapping)
    }
}
#endif
