#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// An `iloc` box whose extents take no bytes: with offset, length and index sizes of 0, each extent of an item
/// is zero bytes of the file, so a 2-byte extent count of 65535 per item costs nothing to state, and a few
/// kilobytes of items state billions of extents. What the decoder reads ahead of libheif (``HEIFCodedSize``)
/// must take time and memory in proportion to the file, not to what its counts claim.
@Suite("HEIF item locations that claim more than the file holds")
struct HEIFItemLocationBombTests {
    /// ftyp, then meta: hdlr, pitm (item 1), iinf declaring item 1 as `av01`, iloc (version 0, every field
    /// size 0) with `items` items of 65535 empty extents each, and iprp with an ispe of 64x64 for item 1.
    static func file(items: Int) -> Data {
        typealias S = SyntheticHeaders
        let ftyp = S.box(
            "ftyp",
            ByteWriter.build { ftyp in
                ftyp.ascii("avif")
                ftyp.uint32(0, bigEndian: true)
                ftyp.ascii("mif1")
                ftyp.ascii("avif")
            })
        let hdlr = S.fullBox(
            "hdlr",
            ByteWriter.build { hdlr in
                hdlr.uint32(0, bigEndian: true)
                hdlr.ascii("pict")
                hdlr.append([UInt8](repeating: 0, count: 13))
            })
        let pitm = S.fullBox("pitm", ByteWriter.build { $0.uint16(1, bigEndian: true) })
        let infe = S.fullBox(
            "infe", version: 2,
            ByteWriter.build { infe in
                infe.uint16(1, bigEndian: true)  // item ID
                infe.uint16(0, bigEndian: true)  // protection index
                infe.ascii("av01")
                infe.append([0])  // empty name
            })
        let iinf = S.fullBox("iinf", ByteWriter.build { $0.uint16(1, bigEndian: true) } + infe)
        let iloc = S.fullBox(
            "iloc",
            ByteWriter.build { iloc in
                iloc.append([0x00, 0x00])  // offset and length sizes 0; base offset size 0, reserved
                iloc.uint16(items, bigEndian: true)
                for item in 0..<items {
                    iloc.uint16(item + 1, bigEndian: true)  // item ID
                    iloc.uint16(0, bigEndian: true)  // data reference index
                    iloc.uint16(65535, bigEndian: true)  // extent count; each extent is 0 bytes here
                }
            })
        let ipma = S.fullBox(
            "ipma",
            ByteWriter.build { ipma in
                ipma.uint32(1, bigEndian: true)
                ipma.uint16(1, bigEndian: true)
                ipma.append([1, 0x81])
            })
        let iprp = S.box("iprp", S.box("ipco", S.ispe(width: 64, height: 64)) + ipma)
        let meta = S.fullBox("meta", hdlr + pitm + iinf + iloc + iprp)
        return Data(ftyp + meta + S.box("mdat", [1, 2, 3, 4]))
    }

    @Test func extentsOfNoBytesCostNoMoreThanTheFileThatStatesThem() async throws {
        // 600 items: 3.6 KB of iloc stating 39 million extents (603 MiB and 8 s before the fix).
        let data = Self.file(items: 600)
        #expect(data.count < 4_000)
        let header = try ImageHeader.parse(data)
        #expect(header.format == .avif)
        #expect(header.storedSize == PixelSize(width: 64, height: 64))
        await #expect(processExitsWith: .success) {
            let data = HEIFItemLocationBombTests.file(items: 600)
            await PeakMemory.expectGrowth(belowMiB: 16, "HEIFCodedSize.largest") {
                _ = HEIFCodedSize.largest(in: data)
            }
        }
    }

    @Test func theDecoderTurnsSuchAFileDown() async {
        // All 65535 items the count allows: 393 KB stating 4.3 billion extents.
        await #expect(processExitsWith: .success) {
            let data = HEIFItemLocationBombTests.file(items: 65535)
            let header = try ImageHeader.parse(data)
            let error = await PeakMemory.expectGrowth(belowMiB: 64, "HEIF decode") {
                decodingError { () throws(ImageDecodingError) in
                    try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
                }
            }
            precondition(error?.format == .avif, "\(String(describing: error))")
        }
    }
}
#endif
