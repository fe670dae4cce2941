#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A JPEG of more than ``ImageDecoders/JPEG/maximumScans`` scans is refused, as libjpeg-turbo advises
/// (djpeg's `-maxscans`, TurboJPEG's scan limit): every scan of a progressive file goes over every block
/// of the image, and a scan that only says "these 32767 blocks have no AC coefficients" takes a few bytes.
/// libjpeg takes any number of them, repeated ones too (a warning only), so a file of a few hundred
/// kilobytes can keep a decode busy for minutes: 2,000 such scans of an 8000x8000 gray image, 319 KB,
/// took 6.9 s to decode for a 100-pixel thumbnail, 1.7 s of them per 500 scans.
@Suite struct JPEGScanLimitTests {
    /// The limit, ``ImageDecoders/JPEG/maximumScans``.
    static let limit = 500

    /// video-001.progressive.jpeg (10 scans) with copies of its first scan (the DC coefficients of all
    /// three components) after it, `scans` in all. A DC scan sets the coefficients it carries, so the
    /// copies decode to the same values and the picture is the original's.
    static func progressiveFile(withScans scans: Int) throws -> Data {
        let data = try Fixtures.data("jpeg", "video-001.progressive.jpeg")
        let bytes = [UInt8](data)
        // The first SOS segment and its entropy-coded data, up to the next marker that is not RSTn.
        let start = try #require((0..<bytes.count - 1).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA })
        var end = start + 2 + (Int(bytes[start + 2]) << 8 | Int(bytes[start + 3]))
        while !(bytes[end] == 0xFF && bytes[end + 1] != 0 && !(0xD0...0xD7).contains(bytes[end + 1])) { end += 1 }
        let scan = bytes[start..<end]
        #expect(scan.count > 500)
        let copies = (0..<(scans - 10)).flatMap { _ in scan }
        return Data(bytes[..<end] + copies + bytes[end...])
    }

    static func decode(_ data: Data, cancellable: Bool) throws(ImageDecodingError) -> Bitmap {
        var context = ImageDecodingContext(header: try ImageHeader.parse(data))
        // A store's decode has a cancellation; a context you make has none. The limit holds for both.
        if cancellable { context.cancellation = DecodeCancellation() }
        return try ImageDecoders.JPEG().decode(data, context: context)
    }

    @Test(arguments: [false, true])
    func aFileOfMoreScansThanTheLimitIsRefused(cancellable: Bool) throws {
        let original = try Self.decode(Fixtures.data("jpeg", "video-001.progressive.jpeg"), cancellable: cancellable)
        let atTheLimit = try Self.progressiveFile(withScans: Self.limit)
        #expect(try Self.decode(atTheLimit, cancellable: cancellable) == original)

        let overTheLimit = try Self.progressiveFile(withScans: Self.limit + 1)
        let error = decodingError { () throws(ImageDecodingError) in
            try Self.decode(overTheLimit, cancellable: cancellable)
        }
        #expect(error == ImageDecodingError(format: .jpeg, reason: .unsupportedFeature("more than 500 scans")))
    }
}
#endif
