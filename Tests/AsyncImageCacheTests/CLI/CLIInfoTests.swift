import Foundation
import Testing

@testable import AsyncImageCache

/// `aic info` on files, URLs and with `--json`, as a user runs it.
@Suite struct CLIInfoTests {
    @Test func aFilePrintsItsSizeAndFormat() async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 64, height: 48).write(to: aic.file("photo.jpg"))
        try SampleImages.png(width: 30, height: 20).write(to: aic.file("badge.png"))

        let jpeg = try await aic.run("info", "photo.jpg")
        #expect(jpeg.status == 0, "\(jpeg)")
        #expect(jpeg.stdout == "64x48 JPEG\n")
        #expect(jpeg.stderr.isEmpty)
        #expect(try await aic.run("info", aic.file("badge.png").path).stdout == "30x20 PNG\n")
    }

    @Test func aRotatedJPEGPrintsItsDisplayedSizeThenItsOrientationAndStoredSize() async throws {
        let aic = CommandLineRunner()
        let result = try await aic.run("info", Fixtures.url("exif-orientation", "Landscape_6.jpg").path)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "1800x1200 JPEG (orientation 6, stored 1200x1800)\n")
    }

    @Test func aURLIsReadThroughTheStoreAndAFileURLLikeAPath() async throws {
        let aic = CommandLineRunner()
        let server = try await aic.serve(["a.jpg": try SampleImages.jpeg(width: 120, height: 90)])
        defer { server.stop() }

        let remote = try await aic.run("info", server.url("/images/a.jpg").absoluteString)
        #expect(remote.status == 0, "\(remote)")
        #expect(remote.stdout == "120x90 JPEG\n")
        let fileURL = try await aic.run("info", aic.servedFolder.appendingPathComponent("a.jpg").absoluteString)
        #expect(fileURL.stdout == "120x90 JPEG\n")
    }

    /// `file:/path`, with one slash, is a file URL as much as `file:///path` (RFC 8089; Java's `File.toURI()`
    /// writes it so), not a relative path that starts with a folder named `file:`.
    @Test func aFileURLWithOneSlashIsAFileURL() async throws {
        let aic = CommandLineRunner()
        try SampleImages.jpeg(width: 64, height: 48).write(to: aic.file("photo.jpg"))

        let result = try await aic.run("info", "file:" + aic.file("photo.jpg").path)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "64x48 JPEG\n")
    }

    @Test func aDataURLIsDecodedInPlace() async throws {
        let aic = CommandLineRunner()
        let png = try SampleImages.png(width: 12, height: 7)
        let result = try await aic.run("info", "data:image/png;base64," + png.base64EncodedString())
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "12x7 PNG\n")
    }

    @Test func jsonIsOneObjectWithEveryField() async throws {
        let aic = CommandLineRunner()
        let fixture = Fixtures.url("exif-orientation", "Landscape_6.jpg")
        let byteCount = try Data(contentsOf: fixture).count
        let server = try await aic.serve(["rotated.jpg": try Data(contentsOf: fixture)])
        defer { server.stop() }

        for input in [fixture.path, server.url("/images/rotated.jpg").absoluteString] {
            let result = try await aic.run("info", input, "--json")
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.filter { $0 == "\n" }.count == 1, "one line")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            #expect(object["width"] as? Int == 1800)
            #expect(object["height"] as? Int == 1200)
            #expect(object["format"] as? String == "JPEG")
            #expect(object["orientation"] as? Int == 6)
            #expect(object["storedWidth"] as? Int == 1200)
            #expect(object["storedHeight"] as? Int == 1800)
            #expect(object["bytes"] as? Int == byteCount)
        }
    }

    @Test func aRemoteImageTheDiskTierHoldsNeedsNoServer() async throws {
        let aic = CommandLineRunner()
        let server = try await aic.serve(["a.jpg": try SampleImages.jpeg(width: 200, height: 100)])
        let url = server.url("/images/a.jpg").absoluteString
        // A thumbnail puts the original in the default store's disk tier; info then reads it there.
        #expect(try await aic.run("thumbnail", url, "--width", "20", "--output", "t.png").status == 0)
        server.stop()

        let result = try await aic.run("info", url)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "200x100 JPEG\n")
    }
}
