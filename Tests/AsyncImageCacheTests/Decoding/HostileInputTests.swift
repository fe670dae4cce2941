#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Corrupt, truncated and made-up files loaded through the store: always a typed error that names
/// the format the bytes claim, never a crash, a hang or an `exit()`.
@Suite("Hostile input through the store", .timeLimit(.minutes(2)))
struct HostileInputTests {
    /// Bytes to load, and the format their error must name (`nil` when no signature matches).
    struct Input: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: Data
        let format: ImageFormat?

        var testDescription: String { name }
    }

    /// PngSuite's corrupt files and the byte-truncated JPEGs.
    ///
    /// Six of PngSuite's files break the PNG signature itself (`xs1n0g01` to `xs7n0g01`, `xcrn0g04`,
    /// `xlfn0g04`): nothing says they are PNG, so their error names no format.
    static let corruptFixtures: [Input] = {
        let png = ((try? Fixtures.files(in: "pngsuite", withExtensions: ["png"])) ?? []).filter { $0.hasPrefix("x") }
        let jpeg = ((try? Fixtures.files(in: "jpeg", withExtensions: ["jpeg"])) ?? [])
            .filter { $0.contains("truncated-half") }
        return png.map { name in
            let bytes = (try? Fixtures.data("pngsuite", name)) ?? Data()
            return Input(name: name, bytes: bytes, format: bytes.starts(with: pngSignature) ? .png : nil)
        } + jpeg.map { Input(name: $0, bytes: (try? Fixtures.data("jpeg", $0)) ?? Data(), format: .jpeg) }
    }()

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The signature of every format the header reader knows.
    static let signatures: [(format: ImageFormat, bytes: [UInt8])] = [
        (.jpeg, [0xFF, 0xD8, 0xFF]),
        (.png, pngSignature),
        (.gif, Array("GIF87a".utf8)),
        (.gif, Array("GIF89a".utf8)),
        (.webp, Array("RIFF".utf8) + [0x00, 0x10, 0x00, 0x00] + Array("WEBP".utf8)),
        (.bmp, Array("BM".utf8)),
        (.heif, [0, 0, 0, 0x18] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)),
        (.avif, [0, 0, 0, 0x18] + Array("ftypavif".utf8) + [0, 0, 0, 0] + Array("mif1avif".utf8)),
    ]

    /// Each signature followed by random bytes of several lengths (none at all included).
    static let randomBehindSignatures: [Input] = {
        var random = SeededGenerator(seed: 3_2026)
        return signatures.flatMap { signature in
            [0, 9, 40, 300, 5000].map { length in
                Input(
                    name: "\(signature.format) signature + \(length) random bytes",
                    bytes: Data(signature.bytes + random.bytes(length)),
                    format: signature.format
                )
            }
        }
    }()

    static let unrecognised: [Input] = {
        var random = SeededGenerator(seed: 11)
        let html = "<!DOCTYPE html>\n<html><head><title>404</title></head><body>Not found</body></html>\n"
        return [
            Input(name: "empty file", bytes: Data(), format: nil),
            Input(name: "HTML page", bytes: Data(html.utf8), format: nil),
            Input(name: "random bytes", bytes: Data(random.bytes(2048)), format: nil),
        ]
    }()

    /// Loads `bytes` from a file through a fresh store.
    static func load(_ bytes: Data, targetWidth: CGFloat?) async throws -> Result<Bitmap, ImageLoadingError> {
        let folder = TemporaryDirectory("hostile")
        let url = folder.url.appendingPathComponent("input")
        try bytes.write(to: url)
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        do {
            return .success(try await store.image(for: ImageRequest(url: url, targetWidth: targetWidth)))
        } catch {
            return .failure(error)
        }
    }

    /// The error that loading `bytes` fails with, or `nil` when it succeeds.
    static func loadingError(_ bytes: Data, targetWidth: CGFloat? = 64) async throws -> ImageLoadingError? {
        if case .failure(let error) = try await load(bytes, targetWidth: targetWidth) { return error }
        return nil
    }

    @Test(arguments: corruptFixtures + randomBehindSignatures + unrecognised)
    func everyHostileInputFailsWithADecodingErrorNamingItsFormat(_ input: Input) async throws {
        let error = try await Self.loadingError(input.bytes)
        guard case .decodingFailed(let decodingError) = error else {
            Issue.record("expected .decodingFailed, got \(String(describing: error))")
            return
        }
        #expect(decodingError.format == input.format, "\(decodingError)")
        if input.format == nil {
            #expect([.unrecognizedFormat, .truncated].contains(decodingError.reason), "\(decodingError)")
        }
    }

    @Test func theCorpusHasEveryKindOfHostileInput() {
        // 14 corrupt PngSuite files (6 with a broken signature) and 2 byte-truncated JPEGs; every known signature.
        #expect(Self.corruptFixtures.count == 16)
        #expect(Self.corruptFixtures.filter { $0.format == nil }.count == 6)
        #expect(Set(Self.signatures.map(\.format)) == Set(ImageFormat.allCases))
    }

    @Test(arguments: ["video-001.q50.420.truncated-half.jpeg", "video-001.progressive.truncated-half.jpeg"])
    func aJPEGCutInHalfIsTruncatedAtEveryWidth(name: String) async throws {
        for width: CGFloat? in [nil, 100, 20] {
            let error = try await Self.loadingError(try Fixtures.data("jpeg", name), targetWidth: width)
            #expect(error == .decodingFailed(ImageDecodingError(format: .jpeg, reason: .truncated)))
        }
    }

    @Test func aTwelveBitJPEGIsAnUnsupportedFeature() async throws {
        let error = try await Self.loadingError(try Fixtures.data("jpeg", "monkey12.jpg"))
        #expect(error == .decodingFailed(ImageDecodingError(format: .jpeg, reason: .unsupportedFeature("12-bit"))))
    }

    /// Real files with a run of bytes past their start overwritten at random, so that mostly the decoder,
    /// not the header reader, meets the damage. libjpeg repairs what it can (as browsers do), so an image
    /// of the size its header declares is an acceptable outcome; anything else must be a typed error
    /// for the format. (Measured here: the JPEGs mostly decode, the PNGs mostly fail their checks.)
    @Test(arguments: [
        ("jpeg", "testorig.jpg"), ("jpeg", "video-001.progressive.jpeg"), ("jpeg", "testimgari.jpg"),
        ("pngsuite", "basn6a08.png"), ("pngsuite", "basi2c16.png"), ("references", "yellow_rose.png"),
    ])
    func damageBehindAValidHeaderGivesAnImageOrATypedError(folder: String, name: String) async throws {
        let original = try Fixtures.data(folder, name)
        let format: ImageFormat = name.hasSuffix(".png") ? .png : .jpeg
        var random = SeededGenerator(seed: UInt64(original.count))
        for _ in 0..<12 {
            var bytes = [UInt8](original)
            let start = Int.random(in: min(200, bytes.count / 2)..<bytes.count, using: &random)
            let end = min(bytes.count, start + Int.random(in: 1...64, using: &random))
            bytes.replaceSubrange(start..<end, with: random.bytes(end - start))
            switch try await Self.load(Data(bytes), targetWidth: nil) {
            case .success(let image):
                // The damage may have reached the frame header too: the image must have the size it declares.
                #expect(image.pixelSize == (try ImageHeader.parse(Data(bytes)).displaySize), "\(name)")
            case .failure(.decodingFailed(let error)):
                #expect(error.format == format, "\(name): \(error)")
            case .failure(let other):
                Issue.record("\(name): \(other)")
            }
        }
    }
}
#endif
