#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Images made from images made from images: libheif 1.15 decodes a grid's tiles by recursion, so a chain
/// of grids of one tile each, a few hundred kilobytes, overflows a thread's stack and ends the process.
@Suite("HEIF images made through many levels")
struct HEIFDerivationDepthTests {
    typealias S = SyntheticHeaders

    /// Items 1 to `levels - 1` are 96x64 grids of one tile, each made from the next; item `levels` is
    /// photo.heic's coded picture. The primary item 1 is made through `levels` levels.
    static func chain(levels: Int) throws -> Data {
        let photo = try HEIFGridAmplificationTests.photoPicture()
        let items = 1...levels
        let hdlr = HEIFGridAmplificationTests.hdlr
        let pitm = S.fullBox("pitm", [0, 1])
        let iinf = S.fullBox(
            "iinf",
            ByteWriter.build { iinf in
                iinf.uint16(levels, bigEndian: true)
                for item in items {
                    let type = item == levels ? "hvc1" : "grid"
                    let entry = ByteWriter.build { entry in
                        entry.uint16(item, bigEndian: true)
                        entry.uint16(0, bigEndian: true)
                        entry.append(Array(type.utf8) + [0])
                    }
                    iinf.append(S.fullBox("infe", version: 2, flags: item == 1 ? 0 : 1, entry))
                }
            })
        let iref = S.fullBox(
            "iref",
            ByteWriter.build { iref in
                for item in items.dropLast() {
                    iref.append(
                        S.box(
                            "dimg",
                            ByteWriter.build { dimg in
                                dimg.uint16(item, bigEndian: true)
                                dimg.uint16(1, bigEndian: true)
                                dimg.uint16(item + 1, bigEndian: true)
                            }))
                }
            })
        // Property 1 the picture's hvcC (essential), property 2 the ispe every item has.
        let ipma = S.fullBox(
            "ipma",
            ByteWriter.build { ipma in
                ipma.uint32(levels, bigEndian: true)
                for item in items {
                    ipma.uint16(item, bigEndian: true)
                    ipma.append(item == levels ? [2, 0x81, 0x02] : [1, 0x02])
                }
            })
        let iprp = S.box("iprp", S.box("ipco", photo.hvcC + photo.ispe) + ipma)
        // One description for every grid: version 0, 16-bit sizes, 1 row and 1 column, 96x64.
        let description: [UInt8] = [0, 0, 0, 0, 0, 96, 0, 64]
        func metaBox(codedOffset: Int) -> [UInt8] {
            // iloc version 1: 4-byte offsets and lengths, no base offset; the picture in mdat, the grids in idat.
            let iloc = S.fullBox(
                "iloc", version: 1,
                ByteWriter.build { iloc in
                    iloc.append([0x44, 0x00])
                    iloc.uint16(levels, bigEndian: true)
                    for item in items {
                        iloc.uint16(item, bigEndian: true)
                        iloc.append(item == levels ? [0, 0, 0, 0, 0, 1] : [0, 1, 0, 0, 0, 1])
                        iloc.uint32(item == levels ? codedOffset : 0, bigEndian: true)
                        iloc.uint32(item == levels ? photo.coded.count : description.count, bigEndian: true)
                    }
                })
            return S.fullBox("meta", hdlr + pitm + iloc + iinf + iref + iprp + S.box("idat", description))
        }
        return HEIFGridAmplificationTests.file(coded: photo.coded, meta: metaBox(codedOffset:))
    }

    @Test func aChainWithinTheLimitDecodes() throws {
        let data = try Self.chain(levels: 3)
        let header = try ImageHeader.parse(data)
        #expect(header.storedSize == PixelSize(width: 96, height: 64))
        #expect(HEIFDerivations.problem(in: data) == nil)
        let bitmap = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == PixelSize(width: 96, height: 64))
        // The same pixels as the picture on its own.
        let photo = try Fixtures.data("heif", "photo.heic")
        let direct = try ImageDecoders.HEIF().decode(
            photo, context: ImageDecodingContext(header: try ImageHeader.parse(photo)))
        #expect(bitmap.pixels == direct.pixels)
    }

    @Test func aChainOfMoreLevelsThanTheLimitIsRefused() throws {
        #expect(HEIFDerivations.problem(in: try Self.chain(levels: HEIFDerivations.depthLimit)) == nil)
        for levels in [HEIFDerivations.depthLimit + 1, 4095] {
            // 4,095 levels (235 KB), within the decode limit: before, it reached libheif, which overflowed the
            // stack of the thread decoding it (SIGSEGV).
            let data = try Self.chain(levels: levels)
            let problem = try #require(HEIFDerivations.problem(in: data))
            #expect(problem.contains("levels"))
            let header = try ImageHeader.parse(data)
            let error = decodingError { () throws(ImageDecodingError) in
                try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
            }
            #expect(error?.format == .heif)
            #expect(error.map { "\($0)" }?.contains("levels") == true)
        }
    }
}
#endif
