@_spi(Tools) import AsyncImageCache
import Foundation

/// What the commands take as INPUT: a file path or a URL, and the store they load it through.
enum Inputs {
    /// The file extensions `aic sheet` picks up when it walks a folder: those of the formats the store
    /// decodes here (BMP only through ImageIO; HEIF and AVIF through libheif on Linux).
    #if canImport(ImageIO)
    static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "gif", "webp", "heic", "heif", "avif", "bmp"]
    #else
    static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "gif", "webp", "heic", "heif", "avif"]
    #endif

    /// The URL for a command-line INPUT: `http(s)://`, `file:/` (`file:///path`, and `file:/path` as
    /// RFC 8089 allows) and `data:` are URLs, so is anything else of the form `scheme://` (the store
    /// then names the scheme it does not support); the rest is a path, relative to the current folder.
    /// Throws when it looks like a URL but is none (`http://host:port80/a.jpg`), rather than reading it as a path.
    ///
    /// A path given as bytes that are not UTF-8 (``RawArguments``) is that file, its URL percent-encoded
    /// (`file:///photos/caf%E9.jpg`); so is a URL, its bytes past ASCII percent-encoded.
    static func url(for argument: String) throws(UsageError) -> URL {
        let lowercased = argument.lowercased()
        let looksLikeURL =
            lowercased.hasPrefix("data:") || lowercased.hasPrefix("file:/")
            || (lowercased.range(of: "^[a-z][a-z0-9+.-]*://", options: .regularExpression) != nil)
        let bytes = try RawArguments.bytes(of: argument)
        guard looksLikeURL else { return bytes.map(fileURL(forPathBytes:)) ?? fileURL(forPath: argument) }
        let text = bytes.map { percentEncoded($0, keeping: { $0 < 0x80 }) } ?? argument
        guard let url = URL(string: text) else { throw UsageError("not a valid URL: \(argument)") }
        return url
    }

    /// The bytes of a command-line word that is a path (an option's value: `--output caf\xE9.png`), as the
    /// system passed them, which need not be UTF-8 (``RawArguments``).
    static func pathBytes(of argument: String) throws(UsageError) -> [UInt8] {
        try RawArguments.bytes(of: argument) ?? Array(argument.utf8)
    }

    /// The file URL of `path` as the system resolves it: relative to the current folder, without its `.`
    /// components and repeated slashes, and with the part up to its last `..` resolved by the file system
    /// (`realpath`), where it exists. Collapsed in the text instead (as `URL(fileURLWithPath:)` does with a
    /// relative path, and `standardizedFileURL` with any), `..` after a symbolic link led back to the folder
    /// that holds the link: `link/../a.jpg` named the `a.jpg` beside `link`, not the one beside where it
    /// points, which is the file `cat` and every other program open.
    static func fileURL(forPath path: String) -> URL {
        fileURL(forPathBytes: Array(path.utf8))
    }

    /// ``fileURL(forPath:)`` for a path given as bytes, which need not be UTF-8: such a path's URL has
    /// them percent-encoded (`file:///photos/caf%E9.jpg`), as Foundation cannot spell it.
    static func fileURL(forPathBytes path: [UInt8]) -> URL {
        let slash = UInt8(ascii: "/")
        let absolute = path.first == slash ? path : currentDirectory() + [slash] + path
        var components = absolute.split(separator: slash).filter { !$0.elementsEqual(".".utf8) }.map(Array.init)
        if let last = components.lastIndex(of: Array("..".utf8)),
            let resolved = cString([slash] + components[...last].joined(separator: [slash])).withUnsafeBufferPointer({
                realpath($0.baseAddress!, nil)
            })
        {
            defer { free(resolved) }
            let bytes = UnsafeRawBufferPointer(start: resolved, count: strlen(resolved))
            components = bytes.split(separator: slash).map(Array.init) + components[(last + 1)...]
        }
        return fileURL(forAbsolutePath: [slash] + components.joined(separator: [slash]))
    }

    /// The file URL of `absolutePath`, an absolute path without `.` or `..` components, as bytes:
    /// `URL(fileURLWithPath:)` when they are UTF-8, and otherwise `file://` and the path with every byte
    /// outside the unreserved set and "/" percent-encoded (`file:///photos/caf%E9.jpg`).
    static func fileURL(forAbsolutePath absolutePath: [UInt8]) -> URL {
        if let text = String(validating: absolutePath, as: UTF8.self) { return URL(fileURLWithPath: text) }
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/".utf8)
        // Only ASCII, escaped where a URL needs it: always a URL.
        return URL(string: "file://" + percentEncoded(absolutePath, keeping: unreserved.contains))!
    }

    /// The current folder's path, as bytes (it need not be UTF-8 either).
    private static func currentDirectory() -> [UInt8] {
        guard let path = getcwd(nil, 0) else { return Array(FileManager.default.currentDirectoryPath.utf8) }
        defer { free(path) }
        return Array(UnsafeRawBufferPointer(start: path, count: strlen(path)))
    }

    /// `bytes` NUL-terminated, for a POSIX call that takes a path.
    static func cString(_ bytes: [UInt8]) -> [CChar] {
        bytes.map { CChar(bitPattern: $0) } + [0]
    }

    /// `bytes` as text, each byte that `keeping` turns down written as `%XX`.
    private static func percentEncoded(_ bytes: [UInt8], keeping: (UInt8) -> Bool) -> String {
        bytes.map { keeping($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
    }

    /// The file name of a file or an http(s) URL (its last path component, percent-decoded); `nil` for
    /// other URLs and for a URL whose path ends without one.
    static func fileName(of url: URL) -> String? {
        guard url.isFileURL || url.scheme?.lowercased().hasPrefix("http") == true else { return nil }
        let name = url.lastPathComponent
        return name.isEmpty || name == "/" ? nil : name
    }

    /// ``fileName(of:)`` as bytes, also where its percent escapes stand for bytes that are not UTF-8
    /// (`caf%E9.jpg`, in Latin-1), which `lastPathComponent` gives as `""`: decoded from the
    /// percent-encoded path as `lastPathComponent` decodes it, trailing slashes dropped.
    static func fileNameBytes(of url: URL) -> [UInt8]? {
        if let name = fileName(of: url) { return Array(name.utf8) }
        guard url.isFileURL || url.scheme?.lowercased().hasPrefix("http") == true,
            let last = url.path(percentEncoded: true).split(separator: "/").last
        else { return nil }
        let name = percentDecoded(last)
        return name.isEmpty ? nil : name
    }

    /// The bytes `text` stands for, each `%XX` decoded (a `%` without two hex digits after it kept as it is).
    private static func percentDecoded(_ text: Substring) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = text.utf8[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "%"), rest.count >= 2,
                let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                rest.removeFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return bytes
    }

    /// A short name for progress lines and failure lists: the file name of a file or an http(s) URL,
    /// the start of anything else; its control characters shown as `?` (``Console/printable(_:)``): a file
    /// name, or a URL's percent-decoded one, may hold a newline or an escape. A name whose bytes are not
    /// UTF-8 is shown percent-encoded (`caf%E9.jpg`), as the store's messages show its path.
    static func displayName(of url: URL) -> String {
        if let name = fileName(of: url) { return Console.printable(name) }
        if fileNameBytes(of: url) != nil, let name = url.path(percentEncoded: true).split(separator: "/").last {
            return Console.printable(String(name))
        }
        let text = url.absoluteString
        return text.count > 40 ? text.prefix(40) + "..." : text
    }

    /// The URLs for `arguments`, with each folder replaced by the images inside it (recursively, by
    /// extension, sorted by path so a sheet comes out the same on every run: ``FolderWalk``). Files named
    /// on the command line are kept whatever their extension; a missing one fails later, when it loads.
    static func expandingFolders(_ arguments: [String]) throws -> [URL] {
        try arguments.flatMap { argument -> [URL] in
            let url = try url(for: argument)
            // A path with a %00 names no folder: it fails when it loads, with the store's reason.
            guard url.isLocalFileURL, let path = try? FileSystemPath(url),
                let images = FolderWalk.imagePaths(inFolderAt: path.bytes)
            else { return [url] }
            return images.map(fileURL(forAbsolutePath:))
        }
    }

    /// The store the commands load through: `name` under the user's cache folder, as
    /// `ImageStore(name:)` would make it, but with a bad name reported instead of trapping.
    static func store(named name: String = "default") throws(UsageError) -> ImageStore {
        do {
            return try ImageStore(configuration: ImageStore.Configuration(name: name))
        } catch {
            throw UsageError(error.description)
        }
    }

    /// The one-line reason a load of `url` failed, naming the input when the error itself does not.
    static func describe(_ error: ImageLoadingError, loading url: URL) -> String {
        switch error {
        case .decodingFailed, .invalidDataURL, .cancelled: "\(displayName(of: url)): \(error.description)"
        default: error.description
        }
    }
}
