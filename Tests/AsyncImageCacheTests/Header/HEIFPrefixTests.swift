import Foundation
import Testing

@testable import AsyncImageCache

/// A download of a sound HEIF or AVIF file cut anywhere: the header reader says `.truncated` until the bytes
/// settle the size, then gives the whole file's answer for every longer prefix. A prefix is never `.corrupt`
/// or another size, which the store would remember for the file.
@Suite(.ownThreads) struct HEIFPrefixTests {
    /// The fixtures of the folder, every one with a header (those made to be refused are in `hostile/`).
    static let names: [String] = {
        let folder = Fixtures.url("heif", "")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return files.filter { $0.hasSuffix(".heic") || $0.hasSuffix(".avif") }.sorted()
    }()

    @Test func thereAreFixturesToCut() {
        #expect(Self.names.count >= 29, "\(Self.names)")
    }

    @Test(arguments: names)
    func everyPrefixIsTruncatedOrTheWholeFilesAnswer(name: String) throws {
        let data = try Fixtures.data("heif", name)
        let whole = try ImageHeader.parse(data)
        var answeredAt: Int?
        for length in 0..<data.count {
            do {
                let header = try ImageHeader.parse(data.prefix(length))
                #expect(header == whole, "\(name) at \(length) bytes")
                answeredAt = answeredAt ?? length
            } catch {
                #expect(error.reason == .truncated, "\(name) at \(length) bytes: \(error)")
                #expect(answeredAt == nil, "\(name) answered at \(answeredAt ?? 0) bytes but not at \(length)")
            }
        }
        // The whole file answers: some prefix short of it does too, or the whole is just past the last.
        #expect(answeredAt != nil || (try? ImageHeader.parse(data.prefix(data.count - 1))) == nil)
    }
}
