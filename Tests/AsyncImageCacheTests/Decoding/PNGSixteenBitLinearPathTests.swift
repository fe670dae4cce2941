#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// The 16-bit path that Adam7 files and files whose gamma libpng corrects take
/// (``ImageDecoders/PNG/SixteenBitPath/linear``): nearly transparent pixels keep their colour, and a decode
/// nobody wants stops.
@Suite("PNG 16-bit linear path")
struct PNGSixteenBitLinearPathTests {
    let decoder = ImageDecoders.PNG()

    /// Alpha samples from the least that is still visible at 8 bits (129 of 65535 is 1 of 255) up to opaque.
    static let alphas: [UInt16] = [129, 200, 257, 400, 777, 1500, 3000, 65535]

    /// A 16x16 RGBA file of varied colour, dark ones among them, under nearly transparent alpha.
    static func nearlyTransparent(interlaced: Bool, chunks: [(String, [UInt8])] = []) -> Data {
        SyntheticPNG.sixteenBit(width: 16, height: 16, channels: 4, interlaced: interlaced, chunks: chunks) {
            sample(x: $0, y: $1, channel: $2)
        }
    }

    static func sample(x: Int, y: Int, channel: Int) -> UInt16 {
        if channel == 3 { return alphas[(x + y) % alphas.count] }
        return UInt16((x * 37 + y * 101 + channel * 57) % 256 * 256 + (x * y * 13) % 256)
    }

    /// The 8-bit pixels computed from the 16-bit samples: alpha scaled, colour straight (not premultiplied)
    /// through the file's gamma `fileGamma` to linear light and encoded with libpng's power of 1/2.2.
    static func reference(fileGamma: Double) -> [UInt8] {
        (0..<16).flatMap { y in
            (0..<16).flatMap { x in
                (0..<4).map { channel -> UInt8 in
                    let level = Double(sample(x: x, y: y, channel: channel)) / 65535
                    let encoded = channel == 3 ? level : pow(level, 0.45455 / fileGamma)
                    return UInt8((encoded * 255).rounded())
                }
            }
        }
    }

    /// Every sample, in pixels whose alpha is visible, within 1 of `reference`; the largest difference.
    static func largestDifference(_ bitmap: Bitmap, from reference: [UInt8]) -> Int {
        stride(from: 0, to: reference.count, by: 4).filter { reference[$0 + 3] > 0 }.map { offset in
            (0..<4).map { abs(Int(bitmap.pixels[offset + $0]) - Int(reference[offset + $0])) }.max()!
        }.max()!
    }

    /// Before: libpng's linear output is premultiplied, 16 bits a sample, so a colour under alpha 129 of
    /// 65535 had some 129 levels of light left, and dark ones none: the largest difference was 17 untagged
    /// and 5 with a gamma of 1.0, sequential or interlaced, against at most 1 allowed here.
    @Test(arguments: [false, true], [nil, 1.0])
    func nearlyTransparentPixelsKeepTheirColour(interlaced: Bool, gamma: Double?) throws {
        let chunks = gamma.map { [SyntheticPNG.gamma($0)] } ?? []
        let data = Self.nearlyTransparent(interlaced: interlaced, chunks: chunks)
        let bitmap = try decoder.decode(data, context: decodingContext(.png), sixteenBitPath: .linear)
        let reference = Self.reference(fileGamma: gamma ?? 0.45455)
        #expect(Self.largestDifference(bitmap, from: reference) <= 1)
    }

    /// A sequential untagged file, which libpng reduces to 8 bits itself without premultiplying: the linear
    /// path gives its pixels, nearly transparent ones too. Before: up to 17 apart.
    /// A gamma close enough to sRGB's that libpng leaves the samples alone (its product with 2.2 within 5 %
    /// of 1) gives the same pixels interlaced, a file this package reads itself, as sequential, which
    /// libpng's simplified API reads; so do the files at the band's edges, which the package reads both ways.
    /// Before, the interlaced file was corrected exactly: 0x8000 came out 130 against 128.
    @Test(arguments: [47_000, 44_000, 43_300, 47_700])
    func aGammaLibpngLeavesAloneGivesTheSamePixelsInterlacedOrNot(gamma: Int) throws {
        let gAMA = (0..<4).map { UInt8(truncatingIfNeeded: gamma >> (24 - 8 * $0)) }
        func file(interlaced: Bool) -> Data {
            SyntheticPNG.sixteenBit(
                width: 16, height: 16, channels: 4, interlaced: interlaced, chunks: [("gAMA", gAMA)]
            ) {
                x, y, channel in channel == 3 ? 0xFFFF : UInt16((x * 16 + y) * 255 + channel * 97)
            }
        }
        let sequential = try decoder.decode(file(interlaced: false), context: decodingContext(.png))
        let interlaced = try decoder.decode(file(interlaced: true), context: decodingContext(.png))
        #expect(sequential == interlaced)
    }

    @Test func theLinearPathAgreesWithLibpngsEightBitOutputUnderNearlyTransparentAlpha() throws {
        let data = Self.nearlyTransparent(interlaced: false)
        let byLibpng = try decoder.decode(data, context: decodingContext(.png), sixteenBitPath: .automatic)
        let byLinearPath = try decoder.decode(data, context: decodingContext(.png), sixteenBitPath: .linear)
        #expect(Self.largestDifference(byLinearPath, from: byLibpng.pixels) <= 1)
    }

    /// Before: the linear path read the image in one call and converted it without looking at the flag, and
    /// gave the 16x16 bitmap.
    @Test(arguments: [false, true])
    func theLinearPathStopsOnARaisedCancellation(interlaced: Bool) throws {
        let data = Self.nearlyTransparent(interlaced: interlaced)
        var context = ImageDecodingContext(header: try ImageHeader.parse(data))
        context.cancellation = DecodeCancellation()
        context.cancellation?.cancel()
        #expect(throws: ImageDecodingError(format: .png, reason: .cancelled)) {
            try decoder.decode(data, context: context, sixteenBitPath: .linear)
        }
    }
}
#endif
