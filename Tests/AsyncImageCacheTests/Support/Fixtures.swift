import Foundation

/// The test fixtures copied into `Tests/AsyncImageCacheTests/Fixtures/` (with their license notes).
enum Fixtures {
    /// The root of the copied fixtures folder.
    static let root: URL = Bundle.module.resourceURL!.appendingPathComponent("Fixtures", isDirectory: true)

    /// The URL of `name` inside the fixtures `folder`, e.g. `url("jpeg", "testorig.jpg")`.
    static func url(_ folder: String, _ name: String) -> URL {
        root.appendingPathComponent(folder, isDirectory: true).appendingPathComponent(name)
    }

    /// The bytes of `name` inside `folder`.
    static func data(_ folder: String, _ name: String) throws -> Data {
        try Data(contentsOf: url(folder, name))
    }

    /// The file names in `folder`, sorted, without license and readme files.
    static func files(in folder: String, withExtensions extensions: Set<String>) throws -> [String] {
        let directory = root.appendingPathComponent(folder, isDirectory: true)
        return try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { extensions.contains(($0 as NSString).pathExtension.lowercased()) }
            .sorted()
    }
}

/// A fresh temporary directory, removed when the returned value is released by the test.
final class TemporaryDirectory: @unchecked Sendable {
    let url: URL

    init(_ label: String = "test") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("aic-\(label)-\(UUID().uuidString)", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
