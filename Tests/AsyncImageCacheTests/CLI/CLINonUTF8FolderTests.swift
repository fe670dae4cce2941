import Foundation
import Testing

@testable import AsyncImageCache

/// `aic sheet` on a folder whose name, or the names in it, are bytes that are not UTF-8 (Latin-1, as
/// Linux allows). Foundation gives such a folder's URL the path `""`, so it was not walked but loaded
/// as a file, and hands the names in a folder over repaired (U+FFFD), URLs of files that are not there.
@Suite struct CLINonUTF8FolderTests {
    /// `alb\xFCm`: "albüm" in Latin-1.
    static let latin1FolderName: [UInt8] = Array("alb".utf8) + [0xFC] + Array("m".utf8)

    /// Latin-1 `name` (`\xE9` for é) as bytes.
    static func latin1(_ name: String) -> [UInt8] {
        name.unicodeScalars.map { UInt8($0.value) }
    }

    /// The folder `album` in `aic`'s workspace, made, and a maker of files named by bytes in it.
    static func album(of aic: CommandLineRunner) throws -> (url: URL, files: RawNamedFiles) {
        let album = aic.file("album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        return (album, RawNamedFiles(in: album))
    }

    @Test(arguments: CLINonUTF8FileNameTests.Operand.allCases)
    func aSheetOfAFolderWhoseNameIsNotUTF8HasTheImagesInIt(
        namedAs operand: CLINonUTF8FileNameTests.Operand
    ) async throws {
        let aic = CommandLineRunner()
        let files = RawNamedFiles(in: aic.workspace.url)
        try files.makeFolder(named: Self.latin1FolderName)
        let folder = try files.file(named: Self.latin1FolderName, contents: nil)
        for (name, height) in [("a.jpg", 100), ("b.jpg", 300)] {
            _ = try files.file(
                named: Self.latin1FolderName + Array("/\(name)".utf8),
                contents: try SampleImages.jpeg(width: 200, height: height))
        }
        let operand =
            switch operand {
            case .path: Self.latin1FolderName
            case .percentEncodedURL: Array(folder.absoluteString.utf8)
            case .rawURL: Array(folder.deletingLastPathComponent().absoluteString.utf8) + Self.latin1FolderName
            }

        let result = try await aic.run(
            argumentBytes: [Array("sheet".utf8), operand]
                + ["--width", "50", "--output", "sheet.png"].map { Array($0.utf8) })
        #expect(result.status == 0, "\(result)")
        // Side by side, 50x25 and 50x75: 8 + 2 * (50 + 8) = 124 wide, 8 + 75 + 8 = 91 high.
        #expect(result.stdout.contains("2 of 2 images, 124x91 px"), "\(result)")
    }

    /// Names that are not UTF-8 inside a folder, and a folder so named inside it: each image is found by
    /// its bytes and loads; the walk's rules are those of UTF-8 names (hidden files and folders, other
    /// extensions and links to folders passed over; a link to an image is an image).
    @Test func theImagesInAFolderWhoseNamesAreNotUTF8AreFoundAndLoad() async throws {
        let aic = CommandLineRunner()
        let (_, files) = try Self.album(of: aic)
        let notAnImage = Data("not an image".utf8)
        _ = try files.file(named: Self.latin1("caf\u{E9}.jpg"), contents: try Fixtures.data("jpeg", "testorig.jpg"))
        _ = try files.file(named: Self.latin1("plain.JPG"), contents: try SampleImages.jpeg(width: 60, height: 40))
        try files.makeFolder(named: Self.latin1("\u{E9}t\u{E9}"))
        _ = try files.file(
            named: Self.latin1("\u{E9}t\u{E9}/plage.png"), contents: try SampleImages.png(width: 40, height: 40))
        // Linked to by the name of an image: counted, as when named on the command line.
        try files.makeLink(named: Self.latin1("li\u{E9}.jpg"), to: Self.latin1("caf\u{E9}.jpg"))
        // Passed over: hidden, another extension, inside a hidden folder, through a link to a folder.
        _ = try files.file(named: Self.latin1(".cach\u{E9}.jpg"), contents: notAnImage)
        _ = try files.file(named: Self.latin1("caf\u{E9}.txt"), contents: notAnImage)
        try files.makeFolder(named: Self.latin1(".vignett\u{E9}s"))
        _ = try files.file(named: Self.latin1(".vignett\u{E9}s/a\u{E9}.jpg"), contents: notAnImage)
        try files.makeLink(named: Self.latin1("lien\u{E9}"), to: Self.latin1(".vignett\u{E9}s"))

        let result = try await aic.run("sheet", "album", "--width", "50", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("4 of 4 images"), "\(result)")
        #expect(!result.stderr.contains("failed"), "\(result)")
    }

    /// A folder bind-mounted inside itself (same file system, so not passed over as another one) is walked once:
    /// the walk remembers the folders it has listed, as Foundation's enumerator (`fts`) reported the cycle.
    /// Before, each image came twice, once through the mount ("2 of 2 images").
    @Test(.enabled(if: ScratchFileSystem.isAvailable, "needs root to bind-mount a folder"))
    func aFolderMountedInsideItselfIsWalkedOnce() async throws {
        let aic = CommandLineRunner()
        let (album, _) = try Self.album(of: aic)
        let loop = album.appendingPathComponent("inner/loop")
        try FileManager.default.createDirectory(at: loop, withIntermediateDirectories: true)
        try SampleImages.jpeg(width: 60, height: 40).write(to: album.appendingPathComponent("a.jpg"))
        try ScratchFileSystem.mount(["--bind", album.path, loop.path])
        defer { try? ScratchFileSystem.mount(["-l", loop.path], tool: "/bin/umount") }

        let result = try await aic.run("sheet", "album", "--width", "50", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("1 of 1 images"), "\(result)")
    }

    /// A file whose name is not UTF-8 and that fails to load is named in the list of failures by its name,
    /// percent-encoded as the store's messages spell its path, not by the start of its URL (which names the
    /// folders above it and is cut before the name).
    @Test func aFailedImageWhoseNameIsNotUTF8IsListedByItsName() async throws {
        let aic = CommandLineRunner()
        let (_, files) = try Self.album(of: aic)
        _ = try files.file(named: Self.latin1("caf\u{E9}.jpg"), contents: Data("not an image".utf8))
        _ = try files.file(named: Self.latin1("plain.jpg"), contents: try SampleImages.jpeg(width: 60, height: 40))

        let result = try await aic.run("sheet", "album", "--width", "50", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("1 of 2 images"), "\(result)")
        #expect(result.stderr.contains("1 of 2 failed:\n  caf%E9.jpg: "), "\(result)")
    }
}
