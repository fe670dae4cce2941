import Foundation
import Testing

@testable import AsyncImageCache

/// `--output` and `--output-dir` given as bytes that are not UTF-8 (Latin-1, as Linux allows): the PNG is
/// written under those bytes, not under the name `CommandLine.arguments` repairs them to (U+FFFD).
@Suite struct CLINonUTF8OutputTests {
    /// `vignette-caf\xE9.png`: "vignette-café.png" in Latin-1.
    static let latin1Output = CLINonUTF8FolderTests.latin1("vignette-caf\u{E9}.png")

    /// The workspace's path as aic sees it (its current folder, links resolved).
    static func realPath(of aic: CommandLineRunner) throws -> String {
        let folder = try #require(realpath(aic.workspace.url.path, nil))
        defer { free(folder) }
        return String(cString: folder)
    }

    @Test(arguments: ["thumbnail", "sheet"])
    func anOutputNamedByBytesThatAreNotUTF8IsWrittenUnderThoseBytes(command: String) async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        files.removeLater(fileNamed: Self.latin1Output)
        try SampleImages.jpeg(width: 200, height: 100).write(to: aic.file("a.jpg"))

        let result = try await aic.run(
            argumentBytes: [command, "a.jpg", "--width", "100", "--output"].map { Array($0.utf8) } + [Self.latin1Output]
        )
        #expect(result.status == 0, "\(result)")
        #expect(files.names(inFolderNamed: []) == [Array("a.jpg".utf8), Self.latin1Output], "\(result)")
        let png = try #require(files.contents(ofFileNamed: Self.latin1Output), "\(result)")
        let size = try CommandLineRunner.decodePNG(png).pixelSize
        #expect(size == (command == "sheet" ? PixelSize(width: 116, height: 66) : PixelSize(width: 100, height: 50)))
        // Named percent-encoded, never with the raw byte.
        #expect(result.stdout.hasPrefix("\(try Self.realPath(of: aic))/vignette-caf%E9.png: "), "\(result)")
    }

    @Test func anOutputFolderNamedByBytesThatAreNotUTF8GetsTheThumbnails() async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        let folder = CLINonUTF8FolderTests.latin1("vignett\u{E9}s")
        try files.makeFolder(named: folder)
        for name in ["a.png", "b.png"] { files.removeLater(fileNamed: folder + Array("/\(name)".utf8)) }
        try SampleImages.jpeg(width: 200, height: 100).write(to: aic.file("a.jpg"))
        try SampleImages.jpeg(width: 100, height: 100).write(to: aic.file("b.jpg"))

        let result = try await aic.run(
            argumentBytes: ["thumbnail", "a.jpg", "b.jpg", "--width", "20", "--output-dir"].map { Array($0.utf8) }
                + [folder])
        #expect(result.status == 0, "\(result)")
        #expect(files.names(inFolderNamed: folder) == [Array("a.png".utf8), Array("b.png".utf8)], "\(result)")
        let thumbnail = try CommandLineRunner.decodePNG(
            try #require(files.contents(ofFileNamed: folder + Array("/a.png".utf8))))
        #expect(thumbnail.pixelSize == PixelSize(width: 20, height: 10))
        #expect(result.stdout.contains("\(try Self.realPath(of: aic))/vignett%E9s/b.png: 20x20 PNG\n"), "\(result)")
    }

    /// An output that is the input, both named by bytes that are not UTF-8: the check stats the file by its
    /// bytes (it stat'ed `url.path`, "", and found nothing to protect).
    @Test func anOutputThatIsAnInputNamedByBytesThatAreNotUTF8IsRefused() async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        let name = CLINonUTF8FolderTests.latin1("caf\u{E9}.png")
        let original = try SampleImages.png(width: 32, height: 32)
        _ = try files.file(named: name, contents: original)

        let result = try await aic.run(
            argumentBytes: [Array("thumbnail".utf8), name] + ["--width", "8", "--output"].map { Array($0.utf8) } + [
                name
            ])
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains("/caf%E9.png is the input "), "\(result)")
        #expect(files.contents(ofFileNamed: name) == original, "the input was overwritten: \(result)")
    }

    /// In --output-dir, the thumbnail of an input whose name is not UTF-8 is named after the name's bytes, as
    /// any other is (it was input-N), whether the input is given as bytes or as a percent-encoded URL.
    @Test func outputDirNamesTheThumbnailOfAnInputNotUTF8AfterItsNameBytes() async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        try FileManager.default.createDirectory(at: aic.file("out"), withIntermediateDirectories: true)
        let byBytes = CLINonUTF8FolderTests.latin1("caf\u{E9}.jpg")
        let byURL = try files.file(
            named: CLINonUTF8FolderTests.latin1("caf\u{E8}.jpg"), contents: try SampleImages.jpeg(width: 40, height: 30)
        )
        _ = try files.file(named: byBytes, contents: try SampleImages.jpeg(width: 40, height: 20))
        try SampleImages.jpeg(width: 40, height: 40).write(to: aic.file("plain.jpg"))
        let thumbnails = ["caf\u{E8}.png", "caf\u{E9}.png"].map {
            Array("out/".utf8) + CLINonUTF8FolderTests.latin1($0)
        }
        for name in thumbnails { files.removeLater(fileNamed: name) }

        let result = try await aic.run(
            argumentBytes: [Array("thumbnail".utf8), byBytes, Array(byURL.absoluteString.utf8)]
                + ["plain.jpg", "--width", "20", "--output-dir", "out"].map { Array($0.utf8) })
        #expect(result.status == 0, "\(result)")
        let written = files.names(inFolderNamed: Array("out".utf8))
        #expect(
            written == [
                CLINonUTF8FolderTests.latin1("caf\u{E8}.png"), CLINonUTF8FolderTests.latin1("caf\u{E9}.png"),
                Array("plain.png".utf8),
            ], "\(result)")
        let thumbnail = try CommandLineRunner.decodePNG(try #require(files.contents(ofFileNamed: thumbnails[1])))
        #expect(thumbnail.pixelSize == PixelSize(width: 20, height: 10))
        #expect(result.stdout.contains("\(try Self.realPath(of: aic))/out/caf%E9.png: 20x10 PNG\n"), "\(result)")
    }

    /// Two inputs whose names are not UTF-8 and differ only in their extensions would write one thumbnail:
    /// a usage error, as for any other two, and the name is given percent-encoded.
    @Test func twoInputsNotUTF8WithOneStemAreAUsageError() async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        try FileManager.default.createDirectory(at: aic.file("out"), withIntermediateDirectories: true)
        let inputs = ["caf\u{E9}.jpg", "caf\u{E9}.png"].map(CLINonUTF8FolderTests.latin1)
        _ = try files.file(named: inputs[0], contents: try SampleImages.jpeg(width: 40, height: 30))
        _ = try files.file(named: inputs[1], contents: try SampleImages.png(width: 40, height: 30))
        for name in ["input-1.png", "input-2.png", "caf\u{E9}.png"] {
            files.removeLater(fileNamed: Array("out/".utf8) + CLINonUTF8FolderTests.latin1(name))
        }

        let result = try await aic.run(
            argumentBytes: [Array("thumbnail".utf8)] + inputs
                + ["--width", "20", "--output-dir", "out"].map { Array($0.utf8) })
        #expect(result.status == 2, "\(result)")
        #expect(
            result.stderrLines.first == "aic: two inputs would both write \(try Self.realPath(of: aic))/out/caf%E9.png",
            "\(result)")
        #expect(files.names(inFolderNamed: Array("out".utf8)).isEmpty, "\(result)")
    }

    /// Names that are equal as text but not as bytes (`café` with a precomposed and with a combining accent,
    /// in two folders) are two files on Linux, whose thumbnails do not overwrite each other: both are written.
    /// Before, they were compared as text and refused as a clash.
    @Test func inputsWhoseNamesDifferOnlyInTheirUnicodeFormBothGetThumbnails() async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        for folder in ["n1", "n2", "out"] {
            try FileManager.default.createDirectory(at: aic.file(folder), withIntermediateDirectories: true)
        }
        let composed = Array("caf\u{E9}".utf8)
        let decomposed = Array("cafe\u{301}".utf8)
        let inputs = [
            Array("n1/".utf8) + composed + Array(".png".utf8), Array("n2/".utf8) + decomposed + Array(".jpg".utf8),
        ]
        _ = try files.file(named: inputs[0], contents: try SampleImages.png(width: 40, height: 30))
        _ = try files.file(named: inputs[1], contents: try SampleImages.jpeg(width: 40, height: 30))
        let outputs = [composed, decomposed].map { Array("out/".utf8) + $0 + Array(".png".utf8) }
        for output in outputs { files.removeLater(fileNamed: output) }

        let result = try await aic.run(
            argumentBytes: [Array("thumbnail".utf8)] + inputs
                + ["--width", "20", "--output-dir", "out"].map { Array($0.utf8) })
        #expect(result.status == 0, "\(result)")
        #expect(
            Set(files.names(inFolderNamed: Array("out".utf8)))
                == Set([composed, decomposed].map { $0 + Array(".png".utf8) }),
            "\(result)")
    }

    /// `aic thumbnail photos/caf\xE9.png --output-dir photos` would write the thumbnail over its input now that
    /// it is named after it: refused, as for a UTF-8 name.
    @Test func anOutputDirThumbnailThatWouldReplaceItsInputNotUTF8IsRefused() async throws {
        let aic = CommandLineRunner()
        try FileManager.default.createDirectory(at: aic.file("photos"), withIntermediateDirectories: true)
        let files = RawNamedFiles(in: aic.file("photos"))
        let name = CLINonUTF8FolderTests.latin1("caf\u{E9}.png")
        let original = try SampleImages.png(width: 32, height: 32)
        _ = try files.file(named: name, contents: original)
        files.removeLater(fileNamed: Array("input-1.png".utf8))

        let result = try await aic.run(
            argumentBytes: [Array("thumbnail".utf8), Array("photos/".utf8) + name]
                + ["--width", "8", "--output-dir", "photos"].map { Array($0.utf8) })
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains("/photos/caf%E9.png is the input "), "\(result)")
        #expect(files.contents(ofFileNamed: name) == original, "the input was overwritten: \(result)")
    }
}
