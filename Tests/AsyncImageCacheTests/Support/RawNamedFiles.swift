import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Files whose names are raw bytes, which need not be UTF-8 (`caf\xE9.jpg`, in Latin-1, as Linux allows),
/// each removed by name when the test releases this (Foundation, which cannot spell the names, might not
/// remove them with their folder).
final class RawNamedFiles {
    /// The folder the files are in.
    let folder: URL
    private let temporary: TemporaryDirectory?
    private var paths: [[CChar]] = []

    /// Files in `folder`; in a fresh temporary folder, removed after them, when `nil`.
    init(in folder: URL? = nil) {
        temporary = folder == nil ? TemporaryDirectory("non-utf8") : nil
        self.folder = folder ?? temporary!.url
    }

    /// The URL of `name` (bytes) in the folder, with the name percent-encoded byte by byte where it is
    /// not ASCII; the file holds `contents`, or is not there when `contents` is `nil`.
    func file(named name: [UInt8], contents: Data?) throws -> URL {
        let escaped = name.map { byte in
            byte < 0x80 ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }.joined()
        let url = try #require(
            URL(string: URL(fileURLWithPath: folder.path, isDirectory: true).absoluteString + escaped))
        guard let contents else { return url }
        let path = self.path(of: name)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(descriptor >= 0, "open: \(String(cString: strerror(errno)))")
        paths.append(path)
        defer { close(descriptor) }
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        try #require(written == contents.count)
        return url
    }

    /// Makes the file named `name` `byteCount` bytes long.
    func setLength(ofFileNamed name: [UInt8], to byteCount: Int) throws {
        try #require(truncate(path(of: name), off_t(byteCount)) == 0)
    }

    /// The path of the file named `name`, NUL-terminated.
    private func path(of name: [UInt8]) -> [CChar] {
        (Array(folder.path.utf8) + [UInt8(ascii: "/")] + name + [0]).map { CChar(bitPattern: $0) }
    }

    deinit {
        for path in paths { unlink(path) }
    }
}
