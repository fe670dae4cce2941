import Foundation
import Testing

@testable import AsyncImageCache

/// `aic` on a file whose name is bytes that are not UTF-8 (`caf\xE9.jpg`, in Latin-1, as Linux allows),
/// named on the command line as those bytes, or as a `file:` URL with them percent-encoded.
/// `CommandLine.arguments` repairs the bytes to U+FFFD, which named another file, or none.
@Suite struct CLINonUTF8FileNameTests {
    /// `caf\xE9.jpg`: "café.jpg" in Latin-1.
    static let latin1Name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)

    /// How the file is named on the command line.
    enum Operand: String, CaseIterable, CustomTestStringConvertible {
        /// Its name's bytes, relative to the current folder.
        case path
        /// A `file:` URL with the bytes percent-encoded (`caf%E9.jpg`).
        case percentEncodedURL
        /// A `file:` URL with the bytes raw, as a shell completes it after `file://$PWD/`.
        case rawURL

        var testDescription: String { rawValue }
    }

    @Test(arguments: Operand.allCases)
    func infoReadsTheFile(namedAs operand: Operand) async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        let url = try files.file(named: Self.latin1Name, contents: try Fixtures.data("jpeg", "testorig.jpg"))
        let bytes =
            switch operand {
            case .path: Self.latin1Name
            case .percentEncodedURL: Array(url.absoluteString.utf8)
            case .rawURL: Array(url.deletingLastPathComponent().absoluteString.utf8) + Self.latin1Name
            }
        let result = try await aic.run(argumentBytes: [Array("info".utf8), bytes])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "227x149 JPEG\n")
    }

    @Test func thumbnailLoadsAFileNamedByItsBytesThroughTheStore() async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        _ = try files.file(named: Self.latin1Name, contents: try Fixtures.data("jpeg", "testorig.jpg"))
        let result = try await aic.run(
            argumentBytes: [Array("thumbnail".utf8), Self.latin1Name]
                + ["--width", "100", "--output", "thumb.png"]
                .map { Array($0.utf8) })
        #expect(result.status == 0, "\(result)")
        let thumbnail = try CommandLineRunner.decodePNG(at: aic.file("thumb.png"))
        #expect(PixelSize(width: thumbnail.width, height: thumbnail.height) == PixelSize(width: 100, height: 66))
    }

    @Test func aMissingFileNamedByItsBytesIsNamedPercentEncodedInTheError() async throws {
        let aic = CommandLineRunner()
        let result = try await aic.run(argumentBytes: [Array("info".utf8), Self.latin1Name])
        #expect(result.status == 1, "\(result)")
        let folder = try #require(realpath(aic.workspace.url.path, nil))
        defer { free(folder) }
        #expect(result.stderr == "aic: cannot read \(String(cString: folder))/caf%E9.jpg: No such file or directory\n")
    }

    /// `caf\xE9.jpg` and `caf\xE8.jpg` both read `caf\u{FFFD}.jpg` in `CommandLine.arguments`: which file
    /// each operand is cannot be told from it, and aic says so rather than guess.
    @Test func twoFilesWhoseNamesReadTheSameOnceRepairedAreAUsageError() async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        let other = Array("caf".utf8) + [0xE8] + Array(".jpg".utf8)
        for name in [Self.latin1Name, other] {
            _ = try files.file(named: name, contents: try Fixtures.data("jpeg", "testorig.jpg"))
        }
        let result = try await aic.run(
            argumentBytes: [Array("sheet".utf8), Self.latin1Name, other, Array("--output".utf8), Array("s.png".utf8)])
        #expect(result.status == 2, "\(result)")
        #expect(result.stderrLines.first?.contains("file: URLs") == true, "\(result)")
    }
}
