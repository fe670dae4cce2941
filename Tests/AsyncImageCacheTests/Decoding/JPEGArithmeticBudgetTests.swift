#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// An arithmetic-coded JPEG's full size counts against the pixel budget, whatever the output scale.
///
/// Its decoding time follows its declared size, not its bytes: after the data, the arithmetic decoder
/// reads zeros, which decode as the likelier symbol, just as a long flat region is encoded. So
/// testimgari.jpg (5.7 KB) with its frame header saying 65500x65500 is a valid, all-but-gray image,
/// and decoding it for a 320-pixel thumbnail took 14 to 50 s of CPU (found by fuzzing).
@Suite struct JPEGArithmeticBudgetTests {
    /// testimgari.jpg with its frame header (SOF9) saying `width` x `height`.
    static func arithmeticFile(declaring width: Int, by height: Int) throws -> Data {
        var data = try Fixtures.data("jpeg", "testimgari.jpg")
        let frame = try #require(ImageHeader.frameHeaderOffset(in: data))
        #expect(data[frame - 1] == 0xC9, "testimgari.jpg's frame is SOF9, arithmetic sequential")
        let size = [height >> 8, height & 0xFF, width >> 8, width & 0xFF].map { UInt8($0) }
        data.replaceSubrange((frame + 3)..<(frame + 7), with: size)
        return data
    }

    @Test func aSmallFileDeclaringAHugeFrameIsRefusedBeforeDecoding() throws {
        // 65500x2048 is 134 Mpx, twice the default budget; at 1/8 it is 8188x256, within it.
        let data = try Self.arithmeticFile(declaring: 65500, by: 2048)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 65500, height: 2048))
        let context = ImageDecodingContext(header: header, minimumSize: PixelSize(width: 320, height: 10))

        let expected = ImageDecodingError(
            format: .jpeg,
            reason: .pixelBudgetExceeded(pixels: 65500 * 2048, budget: ImageDecodingContext.defaultPixelBudget))
        // Before, this decoded all 256 rows of blocks (7.7 s in a debug build) into an 8188x256 bitmap.
        #expect(throws: expected) { try ImageDecoders.JPEG().decode(data, context: context) }
    }

    @Test func theFullSizeCountsForArithmeticCodingAndNotForHuffmanCoding() throws {
        // The same 227x149 picture both ways, against a budget under its full size but over its 1/8.
        let budget = 10_000
        let minimum = PixelSize(width: 20, height: 14)
        let arithmetic = try Fixtures.data("jpeg", "testimgari.jpg")
        let arithmeticContext = ImageDecodingContext(
            header: try ImageHeader.parse(arithmetic), minimumSize: minimum, pixelBudget: budget)
        #expect(
            throws: ImageDecodingError(format: .jpeg, reason: .pixelBudgetExceeded(pixels: 227 * 149, budget: budget))
        ) {
            try ImageDecoders.JPEG().decode(arithmetic, context: arithmeticContext)
        }

        let huffman = try Fixtures.data("jpeg", "testorig.jpg")
        let huffmanContext = ImageDecodingContext(
            header: try ImageHeader.parse(huffman), minimumSize: minimum, pixelBudget: budget)
        let bitmap = try ImageDecoders.JPEG().decode(huffman, context: huffmanContext)
        #expect(bitmap.pixelSize == PixelSize(width: 29, height: 19))
    }

    @Test func anArithmeticFileWithinTheBudgetDecodesCloseToItsHuffmanTwin() throws {
        let minimum = PixelSize(width: 100, height: 66)
        func decoded(_ name: String) throws -> Bitmap {
            let data = try Fixtures.data("jpeg", name)
            return try ImageDecoders.JPEG().decode(
                data, context: ImageDecodingContext(header: try ImageHeader.parse(data), minimumSize: minimum))
        }
        let arithmetic = try decoded("testimgari.jpg")
        let huffman = try decoded("testorig.jpg")
        #expect(arithmetic.pixelSize == PixelSize(width: 114, height: 75))
        // The same picture, encoded apart (its quantization differs a little): close, not identical.
        let psnr = arithmetic.colorPSNR(against: huffman)
        print("testimgari.jpg against testorig.jpg at 1/2: \(psnr) dB")
        #expect(psnr > 30)
    }
}
#endif
