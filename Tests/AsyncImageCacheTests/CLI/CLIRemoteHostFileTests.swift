import Foundation
import Testing

@testable import AsyncImageCache

/// `file://server/path` names a file on that server: aic never reads this machine's `path` for it.
@Suite struct CLIRemoteHostFileTests {
    @Test func infoAndSheetNeverReadALocalFileForAnotherHost() async throws {
        let aic = CommandLineRunner()
        let folder = aic.file("photos")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let photo = folder.appendingPathComponent("a.jpg")
        try SampleImages.jpeg(width: 40, height: 30).write(to: photo)
        let info = try await aic.run("info", "file://server\(photo.path)")
        #expect(info.status != 0 && info.stdout.isEmpty, "info read this machine's file: \(info)")
        let sheet = try await aic.run("sheet", "file://server\(folder.path)", "--output", aic.file("sheet.png").path)
        #expect(!sheet.stdout.contains("1 of 1"), "sheet listed and read this machine's folder: \(sheet)")
    }
}
