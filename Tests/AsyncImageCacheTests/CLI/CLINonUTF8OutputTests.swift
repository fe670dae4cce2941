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
}
