#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Malformed, cut and oversized GIFs: every one ends in a typed error or a plausible bitmap, never a crash.
@Suite("GIF decoder with hostile input")
struct GIFDecoderRobustnessTests {
    let decoder = ImageDecoders.GIF()

    func decode(_ data: Data, pixelBudget: Int = ImageDecodingContext.defaultPixelBudget) -> Result<
        Bitmap, ImageDecodingError
    > {
        Result { () throws(ImageDecodingError) in
            try decoder.decode(data, context: decodingContext(.gif, pixelBudget: pixelBudget))
        }
    }

    @Test func emptyDataIsTruncated() {
        #expect(decode(Data()) == .failure(ImageDecodingError(format: .gif, reason: .truncated)))
    }

    @Test(arguments: ["anim-gr.gif", "interlaced-32x32.gif", "triangle-001.gif"])
    func everyPrefixOfAFileFailsWithAGIFErrorOrGivesTheWholeFirstFrame(name: String) throws {
        // A prefix that holds all of frame 1 decodes (the rest of the file is never read); any shorter one
        // must fail, and mostly because the data ran out.
        let data = try Fixtures.data("gif", name)
        let full = try decode(data).get()
        var truncatedCount = 0
        for length in stride(from: 0, to: data.count, by: 7) {
            switch decode(data.prefix(length)) {
            case .success(let bitmap):
                #expect(bitmap == full, "prefix of \(length) bytes")
            case .failure(let error):
                #expect(error.format == .gif, "prefix of \(length) bytes")
                if error.reason == .truncated { truncatedCount += 1 }
            }
        }
        #expect(truncatedCount > 0)
    }

    @Test func dataCutInsideTheFirstFrameIsTruncated() throws {
        let data = try Fixtures.data("gif", "video-001.gif")
        #expect(
            decode(data.prefix(data.count / 2)) == .failure(ImageDecodingError(format: .gif, reason: .truncated)))
    }

    @Test func randomBytesBehindAGIFSignatureFailWithAGIFErrorOrGiveTheDeclaredScreen() {
        var generator = SeededGenerator(seed: 89)
        var failures = 0
        for round in 0..<300 {
            let signature = Array((round.isMultiple(of: 2) ? "GIF89a" : "GIF87a").utf8)
            let bytes = signature + generator.bytes(Int.random(in: 1...4096, using: &generator))
            // A small budget keeps random screen sizes (up to 65535 on a side) from costing time here.
            switch decode(Data(bytes), pixelBudget: 1 << 20) {
            case .success(let bitmap):
                let width = Int(bytes[6]) | Int(bytes[7]) << 8
                let height = Int(bytes[8]) | Int(bytes[9]) << 8
                #expect(bitmap.pixelSize == PixelSize(width: width, height: height))
            case .failure(let error):
                #expect(error.format == .gif)
                failures += 1
            }
        }
        #expect(failures > 250)
    }

    @Test(arguments: ["any-disposal.gif", "interlaced-32x32.gif", "triangle-001.gif"])
    func flippedBytesInARealFileGiveAGIFErrorOrABitmapOfTheScreenTheHeaderDeclares(name: String) throws {
        let original = try Fixtures.data("gif", name)
        var generator = SeededGenerator(seed: UInt64(original.count))
        // Bytes after the signature: a broken signature is refused before giflib reads anything else.
        for data in generator.mutations(of: original, count: 150, from: 6) {
            switch decode(data, pixelBudget: 1 << 20) {
            case .success(let bitmap): #expect(bitmap.pixelSize == (try? ImageHeader.parse(data))?.storedSize)
            case .failure(let error): #expect(error.format == .gif)
            }
        }
    }

    @Test func aScreenOf30000By30000IsRefusedBeforeAnythingIsAllocated() throws {
        // Bytes 6...9 are the logical screen's width and height, little-endian; 30000 is 0x7530. The canvas
        // would take 3.6 GB.
        var data = try Fixtures.data("gif", "video-001.gif")
        data.replaceSubrange(6..<10, with: [0x30, 0x75, 0x30, 0x75])
        #expect(try ImageHeader.parse(data).storedSize == PixelSize(width: 30000, height: 30000))
        let budget = ImageDecodingContext.defaultPixelBudget
        let reason = ImageDecodingError.Reason.pixelBudgetExceeded(pixels: 900_000_000, budget: budget)
        #expect(decode(data) == .failure(ImageDecodingError(format: .gif, reason: reason)))
    }

    @Test func aFirstFrameLargerThanTheBudgetIsRefusedEvenOnASmallScreen() throws {
        // A 200x100 frame on a 10x10 screen: the declared screen is within the budget, the frame (and the
        // screen grown to take it in) is not.
        let frame = SyntheticGIF.Frame(width: 200, height: 100, indices: [UInt8](repeating: 1, count: 20_000))
        let data = SyntheticGIF.make(width: 10, height: 10, globalColors: [(0, 0, 0), (9, 9, 9)], frames: [frame])
        let reason = ImageDecodingError.Reason.pixelBudgetExceeded(pixels: 20_000, budget: 10_000)
        #expect(decode(data, pixelBudget: 10_000) == .failure(ImageDecodingError(format: .gif, reason: reason)))
        #expect(try decode(data, pixelBudget: 20_000).get().pixelSize == PixelSize(width: 200, height: 100))
    }

    @Test func aFileThatEndsWithoutAnImageIsCorrupt() throws {
        // The header and global color table of a real file, then the trailer.
        let data = try Fixtures.data("gif", "beacon.gif")
        let colorTableBytes = 3 * (2 << Int(data[10] & 0x07))
        let error = ImageDecodingError(format: .gif, reason: .corrupt("the file ends without an image"))
        #expect(decode(data.prefix(13 + colorTableBytes) + [0x3B]) == .failure(error))
    }

    /// A frame whose image data ends before its last pixel, in a file whose bytes are all there: its LZW end
    /// code (or block terminator) comes early. Browsers draw the pixels it has and leave the rest transparent
    /// (Wuffs, as Chrome uses it, and Firefox end the frame there); giflib reports an early end code, which
    /// read as `.truncated` (a cut download, to be fetched again, that never mends), and a block terminator as
    /// corrupt. The row the data ends in is left out too: giflib does not say how much of it came.
    @Test(arguments: [9, 8, 0])
    func imageDataThatEndsBeforeTheLastPixelKeepsTheRowsItHas(pixels: Int) throws {
        let red: SyntheticGIF.Color = (255, 0, 0)
        let green: SyntheticGIF.Color = (0, 255, 0)
        let frame = SyntheticGIF.Frame(width: 4, height: 4, indices: (0..<pixels).map { UInt8($0 % 2) })
        let data = SyntheticGIF.make(width: 4, height: 4, globalColors: [red, green], frames: [frame])
        let bitmap = try decode(data).get()
        // The whole rows decoded, red and green by turns; then transparent black.
        let whole = pixels / 4 * 4
        let colors: [[UInt8]] = [[255, 0, 0, 255], [0, 255, 0, 255]]
        let expected: [UInt8] = (0..<whole).flatMap { colors[$0 % 2] } + [UInt8](repeating: 0, count: (16 - whole) * 4)
        #expect(bitmap.pixels == expected)
        // Cut inside that image data, the file is still truncated.
        #expect(decode(data.prefix(data.count - 4)) == .failure(ImageDecodingError(format: .gif, reason: .truncated)))
    }

    /// The smallest transparent GIF, 26 bytes, a common placeholder: a 1x1 frame with no color table and no
    /// image data at all (its minimum code size, then the block terminator). Before: corrupt.
    @Test func theSmallestTransparentGIFIsOneTransparentPixel() throws {
        let data = try #require(Data(base64Encoded: "R0lGODlhAQABAAAAACwAAAAAAQABAAACADs="))
        #expect(data.count == 26)
        #expect(try decode(data).get().pixels == [0, 0, 0, 0])
    }

    @Test func anUnknownRecordIsCorruptNotTruncated() throws {
        let data = try Fixtures.data("gif", "beacon.gif")
        let colorTableBytes = 3 * (2 << Int(data[10] & 0x07))
        let result = decode(data.prefix(13 + colorTableBytes) + [0x55, 0x00])
        guard case .failure(let error) = result, case .corrupt = error.reason else {
            Issue.record("expected a corrupt-data error, got \(result)")
            return
        }
        #expect(error.format == .gif)
    }
}
#endif
