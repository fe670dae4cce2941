#if os(Linux)
import CWebP
import Foundation
import Testing

@testable import AsyncImageCache

/// Which `ICCP` chunk of a WebP counts: the one libwebp's demuxer finds, which is how browsers read a
/// WebP's profile. It takes the chunk only in an extended file whose `VP8X` flags announce a profile, and
/// only inside the RIFF size.
@Suite("WebP ICCP chunk placement")
struct WebPICCChunkPlacementTests {
    static let profile = [UInt8](SyntheticICC.displayP3())

    static func uint32LE(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    static let iccpChunk = Array("ICCP".utf8) + uint32LE(profile.count) + profile + (profile.count % 2 == 1 ? [0] : [])

    static func settingRIFFSize(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        bytes.replaceSubrange(4..<8, with: uint32LE(bytes.count - 8))
        return bytes
    }

    /// lossy_alpha.webp (extended: VP8X, ALPH, VP8) and test.webp (simple: VP8 alone) with the profile
    /// placed in various ways.
    static func variants() throws -> [(name: String, data: Data)] {
        let extended = [UInt8](try Fixtures.data("webp", "lossy_alpha.webp"))
        let simple = [UInt8](try Fixtures.data("webp", "test.webp"))
        #expect(extended[12..<16].elementsEqual("VP8X".utf8) && extended[20] & 0x20 == 0)
        #expect(simple[12..<16].elementsEqual("VP8 ".utf8))
        var flagged = extended
        flagged.insert(contentsOf: iccpChunk, at: 30)
        flagged[20] |= 0x20
        var unflagged = flagged
        unflagged[20] &= ~0x20
        var flaggedAfterTheImage = extended + iccpChunk
        flaggedAfterTheImage[20] |= 0x20
        var flaggedPastTheRIFFSize = extended + iccpChunk  // the RIFF size left as it was
        flaggedPastTheRIFFSize[20] |= 0x20
        return [
            ("flagged", Data(settingRIFFSize(flagged))),
            ("flagged after the image", Data(settingRIFFSize(flaggedAfterTheImage))),
            ("not flagged", Data(settingRIFFSize(unflagged))),
            ("flagged past the RIFF size", Data(flaggedPastTheRIFFSize)),
            ("in a simple file", Data(settingRIFFSize(simple + iccpChunk))),
        ]
    }

    /// The ICC profile libwebp's demuxer finds in `data`.
    static func demuxedProfile(_ data: Data) -> Data? {
        data.withUnsafeBytes { raw -> Data? in
            var webp = WebPData(bytes: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), size: raw.count)
            guard let demuxer = WebPDemuxInternal(&webp, 0, nil, WEBP_DEMUX_ABI_VERSION) else { return nil }
            defer { WebPDemuxDelete(demuxer) }
            var chunk = WebPChunkIterator()
            guard WebPDemuxGetChunk(demuxer, "ICCP", 1, &chunk) != 0 else { return nil }
            defer { WebPDemuxReleaseChunkIterator(&chunk) }
            return Data(bytes: chunk.chunk.bytes, count: chunk.chunk.size)
        }
    }

    @Test func theProfileIsTheOneLibwebpsDemuxerFinds() throws {
        let expected: [String: Data?] = [
            "flagged": Data(Self.profile), "flagged after the image": Data(Self.profile), "not flagged": nil,
            "flagged past the RIFF size": nil, "in a simple file": nil,
        ]
        for (name, data) in try Self.variants() {
            // Every variant decodes; only where its profile counts differs.
            _ = try ImageDecoders.WebP().decode(
                data, context: ImageDecodingContext(header: try ImageHeader.parse(data)))
            #expect(Self.demuxedProfile(data) == expected[name], "libwebp, \(name)")
            #expect(ColorProfile.embeddedICCData(in: data, format: .webp) == expected[name], "\(name)")
        }
    }

    @Test func theStoreLeavesAPictureWithAnUnannouncedProfileAsDecoded() async throws {
        let folder = TemporaryDirectory("webp-iccp")
        let variants = try Self.variants()
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        func image(_ name: String, _ data: Data) async throws -> Bitmap {
            let file = folder.url.appendingPathComponent(name.replacingOccurrences(of: " ", with: "-") + ".webp")
            try data.write(to: file)
            return try await store.image(for: ImageRequest(url: file))
        }
        let plain = try await image("plain", try Fixtures.data("webp", "lossy_alpha.webp"))
        let converted = try await image("flagged", try #require(variants.first { $0.name == "flagged" }).data)
        #expect(converted != plain)
        let unflagged = try #require(variants.first { $0.name == "not flagged" }).data
        #expect(try await image("not flagged", unflagged) == plain)
    }
}
#endif
