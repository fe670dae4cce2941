import Foundation
import Testing

@testable import AsyncImageCache

/// `aic sheet`: folders and URLs through one store, laid out in a grid, failures listed.
@Suite struct CLISheetTests {
    @Test func aFolderWithACorruptFileMakesASheetOfTheRestAndListsTheFailure() async throws {
        let aic = CommandLineRunner()
        let album = aic.file("album")
        let subfolder = album.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: subfolder, withIntermediateDirectories: true)
        try SampleImages.jpeg(width: 200, height: 100).write(to: album.appendingPathComponent("a.jpg"))
        try SampleImages.jpeg(width: 300, height: 300).write(to: album.appendingPathComponent("c.jpg"))
        try SampleImages.png(width: 100, height: 200).write(to: album.appendingPathComponent("sub/b.png"))
        try Data("not an image".utf8).write(to: album.appendingPathComponent("corrupt.jpg"))
        try Data("notes".utf8).write(to: album.appendingPathComponent("notes.txt"))
        let server = try await aic.serve(["remote.jpg": try SampleImages.jpeg(width: 400, height: 200)])
        defer { server.stop() }

        let result = try await aic.run(
            "sheet", "album", server.url("/images/remote.jpg").absoluteString,
            "--width", "50", "--columns", "3", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")

        // In path order: a 50x25, c 50x50, corrupt (left out), sub/b 50x100, then remote 50x25.
        // Rows of 3 cells 50 wide, 8 px apart and from the edge: 8 + 3 * (50 + 8) = 182 wide;
        // rows as tall as their tallest, 100 and 25: 8 + 100 + 8 + 25 + 8 = 149 high.
        let sheet = try CommandLineRunner.decodePNG(at: aic.file("sheet.png"))
        #expect(sheet.pixelSize == PixelSize(width: 182, height: 149))
        #expect(sheet.pixel(x: 0, y: 0) == (255, 255, 255, 255), "white background")
        #expect(sheet.pixel(x: 10, y: 8 + 100 / 2) != (255, 255, 255, 255), "a's thumbnail, centred in row 1")
        #expect(result.stdout.contains("4 of 5 images, 182x149 px"), "\(result)")
        #expect(result.stdout.contains("source 5"), "\(result)")

        // stderr is a file here, not a terminal: one progress line per image, then the failures.
        let lines = result.stderrLines
        #expect(lines.filter { $0.hasPrefix("[") && $0.contains("/5] ") }.count == 5, "\(result)")
        #expect(lines.contains { $0.hasPrefix("[") && $0.hasSuffix("/5] corrupt.jpg (failed)") }, "\(result)")
        #expect(lines.contains("1 of 5 failed:"), "\(result)")
        #expect(lines.last == "  corrupt.jpg: not a recognised image format", "\(result)")
    }

    /// A file name may hold a newline or an escape: printed as it was, it split its progress line and
    /// its line in the failure list in two, and an escape drove the terminal (`ESC [2J` clears it). Each
    /// control character now shows as `?`, in the progress, the failures and the "aic: " line.
    @Test func controlCharactersInAFileNameShowAsQuestionMarksOnOneLine() async throws {
        let aic = CommandLineRunner()
        let album = aic.file("album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        try SampleImages.jpeg(width: 40, height: 30).write(to: album.appendingPathComponent("good.jpg"))
        try Data("not an image".utf8).write(to: album.appendingPathComponent("bad\u{1B}[2J\nname.jpg"))

        let result = try await aic.run("sheet", "album", "--width", "20", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")
        #expect(!result.stderr.contains("\u{1B}"), "\(result)")
        // The counter counts finished loads, so the bad file may finish first or second.
        let progress = result.stderrLines.filter { $0.hasPrefix("[") }
        #expect(progress.count == 2, "\(result)")
        #expect(progress.contains { $0.hasSuffix("/2] bad?[2J?name.jpg (failed)") }, "\(result)")
        #expect(result.stderrLines.last == "  bad?[2J?name.jpg: not a recognised image format", "\(result)")

        let alone = try await aic.run("sheet", "album/bad\u{1B}[2J\nname.jpg", "--output", "sheet.png")
        #expect(alone.status == 1, "\(alone)")
        #expect(!alone.stderr.contains("\u{1B}"), "\(alone)")
        #expect(alone.stderrLines.first == "[1/1] bad?[2J?name.jpg (failed)", "\(alone)")

        let info = try await aic.run("info", "album/bad\u{1B}[2J\nname.jpg")
        #expect(info.status == 1, "\(info)")
        #expect(info.stderrLines == ["aic: bad?[2J?name.jpg: not a recognised image format"], "\(info)")
    }

    @Test func whenNoImageMakesItNothingIsWrittenAndItExitsWithOne() async throws {
        let aic = CommandLineRunner()
        try Data("not an image".utf8).write(to: aic.file("corrupt.png"))

        let result = try await aic.run("sheet", "corrupt.png", "missing.jpg", "--output", "sheet.png")
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.last == "aic: no image made it into the sheet; nothing written")
        #expect(result.stderr.contains("missing.jpg: cannot read"))
        #expect(!FileManager.default.fileExists(atPath: aic.file("sheet.png").path))
    }

    @Test func aFolderIsSearchedForTheFormatsThatDecodeHere() async throws {
        let aic = CommandLineRunner()
        let album = aic.file("album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        // photo.heic, not a cropped fixture: libheif 1.22 and later refuse those (coded 90x64, declared 90x60).
        for name in ["alpha.avif", "photo.heic"] {
            try Fixtures.data("heif", name).write(to: album.appendingPathComponent(name))
        }
        // A BMP's signature: the store recognises it but has no decoder for it on Linux.
        try Data("BM".utf8 + [UInt8](repeating: 0, count: 60)).write(to: album.appendingPathComponent("old.bmp"))

        let result = try await aic.run("sheet", "album", "--width", "40", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("2 of 2 images"), "\(result)")
        #expect(!result.stderr.contains("old.bmp"), "\(result)")
    }

    @Test func anEmptyFolderIsAFailureThatSaysSo() async throws {
        let aic = CommandLineRunner()
        try FileManager.default.createDirectory(at: aic.file("empty"), withIntermediateDirectories: true)

        let result = try await aic.run("sheet", "empty", "--output", "sheet.png")
        #expect(result.status == 1, "\(result)")
        #expect(result.stderrLines == ["aic: no images found in empty"])
    }

    @Test func fewerImagesThanColumnsMakeANarrowerSheetWithRoundedCornersOnWhite() async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 80, height: 40).write(to: aic.file("one.jpg"))

        let result = try await aic.run("sheet", "one.jpg", "--radius", "10", "--output", "sheet.png")
        #expect(result.status == 0, "\(result)")
        // One 80x40 image in a 240-wide cell (the default): never scaled up, centred.
        let sheet = try CommandLineRunner.decodePNG(at: aic.file("sheet.png"))
        #expect(sheet.pixelSize == PixelSize(width: 8 + 240 + 8, height: 8 + 40 + 8))
        let left = 8 + (240 - 80) / 2
        #expect(sheet.pixel(x: left, y: 8) == (255, 255, 255, 255), "the rounded corner shows the background")
        #expect(sheet.pixel(x: left + 40, y: 8 + 20).alpha == 255)
        #expect(sheet.pixel(x: left + 40, y: 8 + 20) != (255, 255, 255, 255))
    }

    /// 62 columns of 16,384 px make a sheet 1,016,312 px wide, more than a PNG may be: said before a
    /// single image loads, rather than after every one did, by an encoder failing with "invalid arguments".
    @Test func aSheetWiderThanAPNGCanBeIsAUsageErrorBeforeAnythingLoads() async throws {
        let aic = CommandLineRunner()
        try SampleImages.png(width: 4, height: 4).write(to: aic.file("tiny.png"))

        let inputs = Array(repeating: "tiny.png", count: 62)
        let result = try await aic.run(
            ["sheet"] + inputs + ["--width", "16384", "--columns", "62", "--output", "s.png"])
        #expect(result.status == 2, "\(result)")
        #expect(result.stderrLines.first?.contains("1016312 px wide") == true, "\(result)")
        #expect(!result.stderr.contains("[1/62]"), "nothing loaded")
        #expect(!FileManager.default.fileExists(atPath: aic.file("s.png").path))
    }

    /// A 1x16400 strip in a 16,384 px cell: the sheet would be 16400x16416, 269 million pixels (1 GiB
    /// of RGBA), over the cap. The size is known from the thumbnails alone, so nothing that big is made.
    @Test func aSheetOverThePixelCapFailsWithItsSizeAndWritesNothing() async throws {
        let aic = CommandLineRunner()
        try SampleImages.png(width: 1, height: 16400).write(to: aic.file("strip.png"))

        let result = try await aic.run("sheet", "strip.png", "--width", "16384", "--columns", "1", "--output", "s.png")
        #expect(result.status == 1, "\(result)")
        let line = try #require(result.stderrLines.last)
        #expect(line.hasPrefix("aic: the sheet would be 16400x16416 px"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: aic.file("s.png").path))
    }

    /// The help says which status each size limit gives: a sheet too wide is known from the options
    /// before anything loads, a usage error (2, as the test above checks); one too tall or of too many
    /// pixels only once the thumbnails are known (1). Before, the help gave 1 for "over 1000000 px a side".
    @Test func theHelpGivesEachSizeLimitsExitStatus() async throws {
        let help = try await CommandLineRunner().run("sheet", "--help")
        #expect(help.status == 0, "\(help)")
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("2 when the sheet would be over 1000000 px wide"), "\(help.stdout)")
        #expect(text.contains("over 1000000 px tall or 268435456 pixels"), "\(help.stdout)")
        #expect(!text.contains("px a side"), "\(help.stdout)")
    }
}
