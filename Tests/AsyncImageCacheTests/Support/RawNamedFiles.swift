import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Files and folders whose names are raw bytes, which need not be UTF-8 (`caf\xE9.jpg`, in Latin-1, as Linux
/// allows), each removed by name when the test releases this (Foundation, which cannot spell the names, might not
/// remove them with their folder).
final class RawNamedFiles {
    /// The folder the files are in.
    let folder: URL
    private let temporary: TemporaryDirectory?
    private var paths: [[CChar]] = []
    private var folders: [[CChar]] = []

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

    /// Makes a folder named `name` (bytes; a path relative to ``folder``, as every name here may be), removed
    /// after the files in it.
    func makeFolder(named name: [UInt8]) throws {
        let path = self.path(of: name)
        try #require(mkdir(path, 0o755) == 0, "mkdir: \(String(cString: strerror(errno)))")
        folders.append(path)
    }

    /// Makes a symbolic link named `name` to `target` (bytes, as the link holds them).
    func makeLink(named name: [UInt8], to target: [UInt8]) throws {
        let path = self.path(of: name)
        try #require(
            symlink((target + [0]).map { CChar(bitPattern: $0) }, path) == 0,
            "symlink: \(String(cString: strerror(errno)))")
        paths.append(path)
    }

    /// Removes the file named `name`, which another program (aic) may write, along with the others.
    func removeLater(fileNamed name: [UInt8]) {
        paths.append(path(of: name))
    }

    /// The bytes in the file named `name`; `nil` when there is no such file.
    func contents(ofFileNamed name: [UInt8]) -> Data? {
        let descriptor = open(path(of: name), O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { return count == 0 ? data : nil }
            data.append(contentsOf: buffer[..<count])
        }
    }

    /// The names in the folder named `name` (``folder`` itself for `[]`), sorted by their bytes.
    func names(inFolderNamed name: [UInt8]) -> [[UInt8]] {
        let path = name.isEmpty ? Array(folder.path.utf8CString) : self.path(of: name)
        guard let stream = opendir(path) else { return [] }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != Array(".".utf8) && name != Array("..".utf8) { names.append(name) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
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
        for path in folders.reversed() { rmdir(path) }
    }
}
