import Foundation
import Testing

@testable import AsyncImageCache

/// `aic thumbnail`: the PNG it writes, from files and URLs.
@Suite struct CLIThumbnailTests {
    @Test func aFileBecomesAnRGBAPNGOfTheAskedWidth() async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 400, height: 300).write(to: aic.file("photo.jpg"))

        let result = try await aic.run("thumbnail", "photo.jpg", "--width", "100", "--output", "thumb.png")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "\(aic.file("thumb.png").path): 100x75 PNG\n")
        #expect(result.stderr.isEmpty)
        let thumbnail = try CommandLineRunner.decodePNG(at: aic.file("thumb.png"))
        #expect(thumbnail.pixelSize == PixelSize(width: 100, height: 75))
        #expect(thumbnail.pixel(x: 0, y: 0).alpha == 255, "square corners without --radius")
    }

    @Test func aRadiusMakesTheCornersTransparentAndLeavesTheMiddleOpaque() async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 400, height: 300).write(to: aic.file("photo.jpg"))

        let result = try await aic.run("thumbnail", "photo.jpg", "--width=120", "--radius=20", "--output=round.png")
        #expect(result.status == 0, "\(result)")
        let thumbnail = try CommandLineRunner.decodePNG(at: aic.file("round.png"))
        #expect(thumbnail.pixelSize == PixelSize(width: 120, height: 90))
        for (x, y) in [(0, 0), (119, 0), (0, 89), (119, 89)] {
            #expect(thumbnail.pixel(x: x, y: y).alpha == 0, "corner (\(x), \(y))")
        }
        #expect(thumbnail.pixel(x: 60, y: 45).alpha == 255)
        #expect(thumbnail.pixel(x: 60, y: 0).alpha == 255, "the top edge between the corners is kept")
    }

    @Test func aURLLoadsThroughTheDefaultStoreAndLandsInItsDiskTier() async throws {
        let aic = CommandLineRunner()
        let server = try await aic.serve(["0.jpg": try SampleImages.jpeg(width: 300, height: 600)])
        defer { server.stop() }

        let result = try await aic.run(
            "thumbnail", server.url("/images/0.jpg").absoluteString, "--width", "50", "--output", "remote.png")
        #expect(result.status == 0, "\(result)")
        let thumbnail = try CommandLineRunner.decodePNG(at: aic.file("remote.png"))
        #expect(thumbnail.pixelSize == PixelSize(width: 50, height: 100))
        let cached = try FileManager.default.contentsOfDirectory(atPath: aic.storeFolder().path)
        #expect(cached == [SHA256.hexDigest(of: server.url("/images/0.jpg").absoluteString)])
    }

    @Test func anEXIFRotatedPhotoComesOutUpright() async throws {
        let aic = CommandLineRunner()
        let fixture = Fixtures.url("exif-orientation", "Landscape_6.jpg").path
        let result = try await aic.run("thumbnail", fixture, "--width", "180", "--output", "upright.png")
        #expect(result.status == 0, "\(result)")
        let thumbnail = try CommandLineRunner.decodePNG(at: aic.file("upright.png"))
        #expect(thumbnail.pixelSize == PixelSize(width: 180, height: 120))
    }

    /// A URL whose last path component decodes to something with a `/` (`..%2Fphoto.jpg`) still
    /// gets its thumbnail inside --output-dir, never next to it or above it.
    @Test func outputDirKeepsEveryThumbnailInsideItWhateverTheInputIsNamed() async throws {
        let aic = CommandLineRunner()
        // The server serves the file under that literal name; the URL's path decodes to "../photo.jpg".
        let server = try await aic.serve(["..%2Fphoto.jpg": try SampleImages.jpeg(width: 40, height: 30)])
        defer { server.stop() }
        try FileManager.default.createDirectory(at: aic.file("out"), withIntermediateDirectories: true)
        let input = server.url("/images/..%2Fphoto.jpg").absoluteString

        let result = try await aic.run("thumbnail", input, "--width", "20", "--output-dir", "out")
        #expect(!FileManager.default.fileExists(atPath: aic.file("photo.png").path), "written outside out/: \(result)")
        #expect(result.status == 0, "\(result)")
        let written = try FileManager.default.contentsOfDirectory(atPath: aic.file("out").path)
        #expect(written.count == 1, "\(written)")
    }

    /// A "/" with a combining mark after it (`..%2F%CC%81photo.jpg`, "../\u{301}photo.jpg" decoded) is one
    /// Character, which the "/" it was compared with never equals: the thumbnail went to
    /// `\u{301}photo.png` beside --output-dir. Every "/" byte becomes "_" now.
    @Test func outputDirKeepsAThumbnailInsideItWhenASlashCarriesACombiningMark() async throws {
        let aic = CommandLineRunner()
        let server = try await aic.serve(["..%2F%CC%81photo.jpg": try SampleImages.jpeg(width: 40, height: 30)])
        defer { server.stop() }
        try FileManager.default.createDirectory(at: aic.file("out"), withIntermediateDirectories: true)
        let input = server.url("/images/..%2F%CC%81photo.jpg").absoluteString

        let result = try await aic.run("thumbnail", input, "--width", "20", "--output-dir", "out")
        #expect(result.status == 0, "\(result)")
        let outside = try FileManager.default.contentsOfDirectory(atPath: aic.workspace.url.path)
        #expect(outside.sorted() == ["out", "served"], "written outside out/: \(result)")
        let written = try FileManager.default.contentsOfDirectory(atPath: aic.file("out").path)
        #expect(written == [".._\u{301}photo.png"], "\(result)")
    }

    /// A `data:` URL has no file name: its thumbnail was named after the payload's text past its last
    /// "/" (a base64 character), "Z.png" for this one, or a name too long for the file system, which
    /// failed the batch. It is named by its place among the inputs.
    @Test func outputDirNamesAnInputWithoutAFileNameByItsPlace() async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("photo.jpg"))
        let payload = try SampleImages.jpeg(width: 300, height: 200).base64EncodedString()
        try FileManager.default.createDirectory(at: aic.file("out"), withIntermediateDirectories: true)

        let result = try await aic.run(
            "thumbnail", "photo.jpg", "data:image/jpeg;base64," + payload, "--width", "20", "--output-dir", "out")
        #expect(result.status == 0, "\(result)")
        let written = try FileManager.default.contentsOfDirectory(atPath: aic.file("out").path).sorted()
        #expect(written == ["input-2.png", "photo.png"])
        let thumbnail = try CommandLineRunner.decodePNG(at: aic.file("out/input-2.png"))
        #expect(thumbnail.pixelSize == PixelSize(width: 20, height: 13))
    }

    /// One input of a batch that is not an image ended the batch: the thumbnails of the inputs that
    /// happened to be done were written, the others never started, and only the failure was named.
    /// Now every other input is written, the failures are listed, and the status is 1.
    @Test func aBatchWritesEveryOtherThumbnailPastAnInputThatFailsAndListsIt() async throws {
        let aic = CommandLineRunner()
        try FileManager.default.createDirectory(at: aic.file("out"), withIntermediateDirectories: true)
        try Data("not an image".utf8).write(to: aic.file("broken.jpg"))
        // More than run at once (one per core), so that some wait for a lane when the broken one fails.
        let names = (1...(ProcessInfo.processInfo.activeProcessorCount + 4)).map { "photo\($0)" }
        for name in names {
            try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("\(name).jpg"))
        }

        let result = try await aic.run(
            ["thumbnail", "broken.jpg"] + names.map { "\($0).jpg" } + ["--width", "20", "--output-dir", "out"])
        #expect(result.status == 1, "\(result)")
        let written = try FileManager.default.contentsOfDirectory(atPath: aic.file("out").path).sorted()
        #expect(written == names.map { "\($0).png" }.sorted(), "\(result)")
        let total = names.count + 1
        #expect(result.stderrLines.contains("1 of \(total) failed:"), "\(result)")
        #expect(result.stderrLines.contains("  broken.jpg: not a recognised image format"), "\(result)")
        #expect(result.stderrLines.last == "aic: 1 of \(total) thumbnails failed; the others were written")
    }

    /// A batch whose inputs all fail wrote nothing, and does not say that the others were written.
    @Test func aBatchWhoseInputsAllFailDoesNotSayTheOthersWereWritten() async throws {
        let aic = CommandLineRunner()
        try FileManager.default.createDirectory(at: aic.file("out"), withIntermediateDirectories: true)
        try Data("not an image".utf8).write(to: aic.file("broken.jpg"))
        try Data("nor this one".utf8).write(to: aic.file("also-broken.jpg"))

        let result = try await aic.run(
            ["thumbnail", "broken.jpg", "also-broken.jpg", "--width", "20", "--output-dir", "out"])
        #expect(result.status == 1, "\(result)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: aic.file("out").path).isEmpty)
        #expect(result.stderrLines.contains("2 of 2 failed:"), "\(result)")
        #expect(result.stderrLines.last == "aic: 2 of 2 thumbnails failed", "\(result)")
    }
}

/// An output path that holds something other than a regular file is refused, not replaced.
@Suite struct CLIOutputKindTests {
    /// The PNG is written to a new file renamed over the path, so a FIFO (as a device such as
    /// /dev/null would be, for root) was replaced by a regular file holding the PNG.
    @Test(arguments: ["thumbnail", "sheet"])
    func anOutputThatIsAFIFOIsRefusedAndLeftAsItIs(command: String) async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("photo.jpg"))
        let fifo = aic.file("out.png")
        #expect(mkfifo(fifo.path, 0o600) == 0)

        let result = try await aic.run(command, "photo.jpg", "--width", "20", "--output", "out.png")
        var status = stat()
        #expect(lstat(fifo.path, &status) == 0)
        #expect(status.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced: \(result)")
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("is not a regular file"), "\(result)")
    }
}

/// A command never writes its PNG over one of its own inputs.
@Suite struct CLIOutputIsAnInputTests {
    /// `aic thumbnail photos/*.png --output-dir photos` wrote each thumbnail to photos/NAME.png, over
    /// the PNG it was made from; the same for an --output naming the input, however spelled.
    @Test(arguments: [
        ["thumbnail", "photos/a.png", "photos/b.jpg", "--width", "8", "--output-dir", "photos"],
        ["thumbnail", "photos/a.png", "--width", "8", "--output", "photos/a.png"],
        ["thumbnail", "photos/a.png", "--width", "8", "--output", "photos/../photos/a.png"],
        ["sheet", "photos", "--width", "8", "--output", "photos/a.png"],
    ])
    func anOutputThatIsAnInputIsRefusedAndTheInputKept(arguments: [String]) async throws {
        let aic = CommandLineRunner()
        try FileManager.default.createDirectory(at: aic.file("photos"), withIntermediateDirectories: true)
        let original = try ImageEncoders.PNG().encode(
            Bitmap(width: 32, height: 32, pixels: [UInt8](repeating: 200, count: 32 * 32 * 4)))
        try original.write(to: aic.file("photos/a.png"))
        try SampleImages.jpeg(width: 40, height: 30).write(to: aic.file("photos/b.jpg"))

        let result = try await aic.run(arguments)
        #expect(try Data(contentsOf: aic.file("photos/a.png")) == original, "the input was overwritten: \(result)")
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains("it would be overwritten"), "\(result)")
    }
}
