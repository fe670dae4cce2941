@_spi(Tools) import AsyncImageCache
import Foundation

/// The PNG file a command writes, checked before any image loads so that a mistyped path fails at
/// once, with a reason, rather than after a long batch (Foundation's write errors on Linux say
/// little more than "The operation could not be completed").
///
/// Its path is bytes, which need not be UTF-8 (`--output caf\xE9.png`, in Latin-1, as Linux allows):
/// the file is made with those bytes for its name, not with `caf\u{FFFD}.png`, which is what
/// `CommandLine.arguments` makes of them.
struct PNGOutput {
    /// The file's URL, percent-encoded where its path's bytes are not UTF-8 (`file:///out/caf%E9.png`).
    let url: URL
    /// The file's path as the system takes it and as messages name it: `url.path`, or the
    /// percent-encoded path where that is `""` (``FileSystemPath``).
    let path: FileSystemPath
    /// The path of the folder the file is written in.
    private let folder: FileSystemPath

    /// Extensions of other image formats: a PNG written under one of them would be misread by
    /// whatever opens it by name, so such an output path is a usage error.
    static let otherImageExtensions: Set<String> = [
        "jpg", "jpeg", "gif", "webp", "heic", "heif", "avif", "bmp", "tif", "tiff", "jxl",
    ]

    /// `path` when it may name a PNG: any name but one that ends in another image format's extension.
    static func checkedPath(_ path: String, option: String = "--output") throws(UsageError) -> String {
        let pathExtension = URL(fileURLWithPath: path).pathExtension.lowercased()
        guard !otherImageExtensions.contains(pathExtension) else {
            throw UsageError("\(option) \(path): aic writes PNG files; name it .png")
        }
        return path
    }

    /// The output a command-line value names: its bytes, as the system passed them (``RawArguments``).
    init(argument: String) throws {
        try self.init(pathBytes: try Inputs.pathBytes(of: argument))
    }

    /// The output at `pathBytes`, relative to the current folder (``Inputs/fileURL(forPathBytes:)``).
    init(pathBytes: [UInt8]) throws(CommandFailure) {
        // URL(fileURLWithPath:) drops a final "/": `--output thumbs/`, a folder not made yet, wrote a file `thumbs`.
        guard pathBytes.last != UInt8(ascii: "/") else {
            throw CommandFailure(
                "cannot write \(String(decoding: pathBytes, as: UTF8.self)): a file name cannot end in /")
        }
        url = Inputs.fileURL(forPathBytes: pathBytes)
        do {
            path = try FileSystemPath(url)
            folder = try FileSystemPath(url.deletingLastPathComponent())
        } catch {
            // Not reached: a command-line word holds no NUL.
            throw CommandFailure(error.description)
        }
        guard Self.status(of: folder).map({ $0.st_mode & S_IFMT == S_IFDIR }) == true else {
            throw CommandFailure("cannot write \(path): no folder \(folder)")
        }
        guard folder.withCString({ access($0, W_OK) }) == 0 else {
            throw CommandFailure("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        // The write is atomic: a new file renamed over the path. Over a device (/dev/null, /dev/stdout),
        // a FIFO or a socket that rename would put a regular file in its place (for root, /dev/null itself),
        // so only a regular file (or a link to one) is replaced; anything else at the path is refused.
        if let status = Self.status(of: path), status.st_mode & S_IFMT != S_IFREG {
            let kind = status.st_mode & S_IFMT == S_IFDIR ? "is a directory" : "is not a regular file"
            throw CommandFailure("cannot write \(path): \(kind)")
        }
    }

    /// What `stat` says of the file at `path`, through any links; `nil` when there is none.
    private static func status(of path: FileSystemPath) -> stat? {
        var status = stat()
        return path.withCString { stat($0, &status) } == 0 ? status : nil
    }

    /// Throws when one of `outputs` is one of the local files among `inputs` (the same device and inode,
    /// so a link or another spelling of its path counts too): writing it would destroy that input.
    static func checkNoneOverwrites(_ inputs: [URL], outputs: [PNGOutput]) throws(UsageError) {
        func identity(_ path: FileSystemPath) -> [UInt64]? {
            status(of: path).map { [UInt64($0.st_dev), UInt64($0.st_ino)] }
        }
        let outputFiles = Dictionary(
            outputs.compactMap { output in identity(output.path).map { ($0, output) } },
            uniquingKeysWith: { first, _ in first })
        guard !outputFiles.isEmpty else { return }
        for input in inputs where input.isFileURL {
            if let path = try? FileSystemPath(input), let id = identity(path), let output = outputFiles[id] {
                throw UsageError("\(output.path) is the input \(path): it would be overwritten")
            }
        }
    }

    /// Encodes `image` as RGBA PNG and writes it atomically, so a failed run leaves no half file.
    func write(_ image: Bitmap) throws(CommandFailure) {
        let data: Data
        do {
            data = try ImageEncoders.PNG().encode(image)
        } catch {
            throw CommandFailure("cannot encode \(path): \(error.description)")
        }
        // Foundation's write takes `url.path`, which is "" for a path whose bytes are not UTF-8.
        if url.path.isEmpty { return try writeByPathBytes(data) }
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw CommandFailure("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Writes `data` as Foundation's atomic write does, for a path Foundation cannot spell (its bytes are
    /// not UTF-8, and `url.path` is `""`): into a new file in the same folder, made with mode 0666 less the
    /// umask, then renamed over the path, which replaces a link rather than the file it points to.
    private func writeByPathBytes(_ data: Data) throws(CommandFailure) {
        let random = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let temporary = Inputs.cString(folder.bytes + Array("/.aic-\(random).png".utf8))
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw CommandFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
        var failure = writeAll(data, to: descriptor)
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure == 0, path.withCString({ rename(temporary, $0) }) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw CommandFailure("cannot write \(path): \(String(cString: strerror(failure)))")
        }
    }
}

/// Writes all of `data` to `descriptor`, however many calls that takes; `errno` of the call that failed,
/// or 0. (Out of ``PNGOutput``, whose `write(_:)` would hide the system's `write`.)
private func writeAll(_ data: Data, to descriptor: Int32) -> Int32 {
    data.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0, errno != EINTR { return errno }
            offset += max(written, 0)
        }
        return 0
    }
}
