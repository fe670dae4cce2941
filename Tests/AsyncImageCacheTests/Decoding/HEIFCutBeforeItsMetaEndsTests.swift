#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// A download cut short before the end of its `meta` box is `.truncated` for the decoder, as for the header
/// reader: libheif 1.15 drops a top-level box the bytes end in and reports what it then lacks ("No 'ftyp'
/// box", "No 'meta' box"), 1.23 "File size too small" or "Insufficient input data", which alone read like a
/// damaged file.
@Suite("HEIF and AVIF files cut before the end of meta")
struct HEIFCutBeforeItsMetaEndsTests {
    /// The end of the top-level `meta` box of `bytes` (sizes under 4 GiB).
    static func metaEnd(_ bytes: [UInt8]) throws -> Int {
        var offset = 0
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            if String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self) == "meta" { return offset + size }
            offset += size
        }
        throw ImageDecodingError(format: .heif, reason: .corrupt("no meta box"))
    }

    static func decode(_ data: Data, header: ImageHeader) throws(ImageDecodingError) -> Bitmap {
        try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
    }

    /// Every prefix from 1 byte to 8 past the end of `meta` (into the header of the `mdat` that follows), decoded
    /// with the whole file's header as a caller that knows it would. Before, every prefix up to meta's last
    /// byte was `.corrupt("Invalid input: No 'ftyp' box")` (1-27 bytes) or `.corrupt("Invalid input: No 'meta'
    /// box")`; past meta's end libheif itself reported the missing data.
    @Test(arguments: ["photo.heic", "photo.avif", "alpha.avif", "thumbnail.avif", "grid.heic", "overlay.heic"])
    func everyCutBeforeTheEndOfMetaIsTruncated(name: String) throws {
        let data = try Fixtures.data("heif", name)
        let header = try ImageHeader.parse(data)
        // grid.heic's tiles are coded 64x64 under an ispe of 48x32, which libheif 1.22 and later refuse.
        if name == "grid.heic", HEIFLibrary.refusesAPictureOfAnotherSizeThanDeclared {
            #expect(throws: HEIFLibrary.pictureOfAnotherSizeThanDeclared(.heif)) {
                try Self.decode(data, header: header)
            }
        } else {
            #expect(try Self.decode(data, header: header).pixelSize == header.storedSize)
        }
        let truncated = ImageDecodingError(format: header.format, reason: .truncated)
        let metaEnd = try Self.metaEnd([UInt8](data))
        var failures: [Int] = []
        for length in 1...(metaEnd + 8) {
            do {
                _ = try Self.decode(data.prefix(length), header: header)
                failures.append(length)
            } catch {
                if error != truncated { failures.append(length) }
            }
        }
        // One line for the whole file rather than a thousand: the lengths that were not, as runs.
        #expect(ranges(failures) == "", "\(failures.count) of \(metaEnd + 8) prefixes not .truncated")
        if let first = failures.first {
            #expect(throws: truncated, "prefix of \(first) bytes") {
                try Self.decode(data.prefix(first), header: header)
            }
        }
    }

    /// A whole file whose box headers are damaged stays `.corrupt`: ftyp of 3 bytes, or meta of 4 (libheif 1.15:
    /// "No 'ftyp' box", "No 'meta' box", as for a cut; 1.23: "Unexpected end of file", as for data cut inside
    /// meta's items), and meta renamed, after which the file holds only complete boxes, is `.truncated` (the header
    /// reader's answer: a `meta` could follow, as after a cut at a box's end).
    @Test(
        arguments: [
            ("ftyp of 3 bytes", 0, [0, 0, 0, 3], false),
            ("meta of 4 bytes", 28, [0, 0, 0, 4], false),
            ("meta named xeta", 32, Array("xeta".utf8), true),
        ] as [(String, Int, [UInt8], Bool)])
    func aDamagedBoxHeaderIsCorruptButAMissingMetaIsTruncated(
        damage: String, offset: Int, replacement: [UInt8], truncated: Bool
    ) throws {
        let whole = try Fixtures.data("heif", "photo.heic")
        let header = try ImageHeader.parse(whole)
        var bytes = [UInt8](whole)
        bytes.replaceSubrange(offset..<(offset + replacement.count), with: replacement)
        let error = try #require(
            #expect(throws: ImageDecodingError.self, "\(damage)") { try Self.decode(Data(bytes), header: header) })
        let headerError = try #require(
            #expect(throws: ImageDecodingError.self, "\(damage)") { try ImageHeader.parse(Data(bytes)) })
        #expect((error.reason == .truncated) == truncated, "\(damage): \(error)")
        #expect((headerError.reason == .truncated) == truncated, "\(damage): the header's \(headerError)")
    }

    /// A top-level `meta` whose size field is 0 (the box runs to the end of the file) is refused by libheif
    /// 1.15 ("Invalid input: No 'meta' box", heif_suberror_No_meta_box; run with the installed libheif 1.15.1
    /// on each file, and also with meta the last box: the file cut at meta's end), so the decoder says
    /// `.corrupt`: the header does too. Before, it read the file's size (96x64 for each). libheif 1.23 reads
    /// such a file (and decodes it, or finds its data missing when meta is last): the decoder refuses it before
    /// libheif is asked, so it says what the header says whichever libheif is installed.
    @Test(
        arguments: [
            ("photo.heic", false), ("photo.heic", true), ("photo.avif", false), ("grid.heic", false),
            ("grid.heic", true), ("overlay.heic", false),
        ])
    func aMetaBoxOfSizeZeroIsCorruptForHeaderAndDecoder(name: String, metaLast: Bool) throws {
        let whole = try Fixtures.data("heif", name)
        let header = try ImageHeader.parse(whole)
        var bytes = [UInt8](whole)
        let metaEnd = try Self.metaEnd(bytes)
        if metaLast { bytes.removeSubrange(metaEnd...) }
        let meta = try #require(bytes.offset(of: Array("meta".utf8))) - 4
        bytes.replaceSubrange(meta..<(meta + 4), with: [0, 0, 0, 0])
        let damage = "\(name), meta of size 0\(metaLast ? ", last" : "")"
        let decodeError = try #require(
            #expect(throws: ImageDecodingError.self, "\(damage)") { try Self.decode(Data(bytes), header: header) })
        let headerError = try #require(
            #expect(throws: ImageDecodingError.self, "\(damage)") { try ImageHeader.parse(Data(bytes)) })
        guard case .corrupt = decodeError.reason, case .corrupt = headerError.reason else {
            Issue.record("\(damage): the decode gave \(decodeError), the header \(headerError)")
            return
        }
        #expect(headerError.format == header.format)
    }
}

/// `values` (ascending) as runs: "1-27, 30".
private func ranges(_ values: [Int]) -> String {
    var runs: [String] = []
    var index = 0
    while index < values.count {
        var end = index
        while end + 1 < values.count && values[end + 1] == values[end] + 1 { end += 1 }
        runs.append(end == index ? "\(values[index])" : "\(values[index])-\(values[end])")
        index = end + 1
    }
    return runs.joined(separator: ", ")
}
#endif
