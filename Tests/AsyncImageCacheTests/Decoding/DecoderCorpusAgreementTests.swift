#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Every image in every fixtures folder, through the header reader and the default decoder: the size the
/// store promises before decoding (`cachedPixelSize`) is the size of the pixels it later delivers.
@Suite("Header and decoder agree on every fixture")
struct DecoderCorpusAgreementTests {
    static let folders = ["jpeg", "pngsuite", "exif-orientation", "gif", "webp"]

    /// How a file that must not decode fails, from its folder's README.
    enum ExpectedFailure: Sendable {
        /// The signature itself is damaged, so no format is recognised.
        case unrecognized
        case corrupt
        case truncated
        case unsupportedFeature

        func matches(_ error: ImageDecodingError) -> Bool {
            switch (self, error.reason) {
            case (.unrecognized, .unrecognizedFormat), (.corrupt, .corrupt), (.truncated, .truncated),
                (.unsupportedFeature, .unsupportedFeature):
                true
            default: false
            }
        }
    }

    /// The files that must fail, with how (Fixtures/jpeg/README.txt and Fixtures/pngsuite/README.txt).
    static let expectedFailures: [String: ExpectedFailure] = [
        "jpeg/monkey12.jpg": .unsupportedFeature,  // 12-bit samples
        "jpeg/video-001.q50.420.truncated-half.jpeg": .truncated,  // first half of the file
        "jpeg/video-001.progressive.truncated-half.jpeg": .truncated,
        "pngsuite/xs1n0g01.png": .unrecognized,  // bad signature bytes
        "pngsuite/xs2n0g01.png": .unrecognized,
        "pngsuite/xs4n0g01.png": .unrecognized,
        "pngsuite/xs7n0g01.png": .unrecognized,
        "pngsuite/xcrn0g04.png": .unrecognized,  // signature mangled by CR/LF conversion
        "pngsuite/xlfn0g04.png": .unrecognized,
        "pngsuite/xhdn0g08.png": .corrupt,  // bad IHDR CRC
        "pngsuite/xc1n0g08.png": .corrupt,  // colour type 1
        "pngsuite/xc9n2c08.png": .corrupt,  // colour type 9
        "pngsuite/xd0n2c08.png": .corrupt,  // bit depth 0
        "pngsuite/xd3n2c08.png": .corrupt,  // bit depth 3
        "pngsuite/xd9n2c08.png": .corrupt,  // bit depth 99
        "pngsuite/xdtn0g01.png": .corrupt,  // no IDAT chunk
        "pngsuite/xcsn0g01.png": .corrupt,  // bad IDAT CRC
    ]

    static let allFiles: [String] = folders.flatMap { folder in
        let names = (try? Fixtures.files(in: folder, withExtensions: ["jpg", "jpeg", "png", "gif", "webp"])) ?? []
        return names.map { "\(folder)/\($0)" }
    }

    static let decodable = allFiles.filter { expectedFailures[$0] == nil }

    static func data(_ path: String) throws -> Data {
        let parts = path.split(separator: "/", maxSplits: 1).map(String.init)
        return try Fixtures.data(parts[0], parts[1])
    }

    @Test func theCorpusIsEveryFixtureAndEveryExpectedFailureIsInIt() {
        // 23 JPEG + 176 PngSuite + 18 EXIF + 13 GIF + 12 WebP, as the folders' READMEs list them.
        #expect(Self.allFiles.count == 242)
        #expect(Set(Self.expectedFailures.keys).isSubset(of: Self.allFiles))
        #expect(Self.decodable.count == 242 - 17)
    }

    @Test(arguments: decodable)
    func theHeadersSizeIsTheDecodedSize(path: String) throws {
        let data = try Self.data(path)
        let header = try ImageHeader.parse(data)
        let bitmap = try ImageDecoders.Default().decode(data, context: ImageDecodingContext(header: header))
        #expect(bitmap.pixelSize == header.storedSize)
    }

    @Test(arguments: allFiles.filter { $0.hasPrefix("exif-orientation/") })
    func theHeadersOrientationIsTheDigitInTheFileName(path: String) throws {
        // Fixtures/exif-orientation/README.txt: the digit is the EXIF orientation; 0 is invalid and means up.
        let digit = try #require(Int(String(path.dropLast(4).last!)))
        let header = try ImageHeader.parse(try Self.data(path))
        #expect(header.orientation == (digit == 0 ? .up : ImageOrientation(rawValue: digit)))
    }

    @Test(arguments: expectedFailures.keys.sorted())
    func aFileThatMustNotDecodeFailsWithATypedError(path: String) throws {
        let data = try Self.data(path)
        let error = decodingError { () throws(ImageDecodingError) in
            let header = try ImageHeader.parse(data)
            return try ImageDecoders.Default().decode(data, context: ImageDecodingContext(header: header))
        }
        let failure = try #require(error, "\(path) decoded")
        let expected = try #require(Self.expectedFailures[path])
        #expect(expected.matches(failure), "\(path): \(failure)")
        let format: ImageFormat? = expected == .unrecognized ? nil : path.hasPrefix("jpeg/") ? .jpeg : .png
        #expect(failure.format == format)
    }
}
#endif
