import AsyncImageCache
import Foundation

/// The PNG file a command writes, checked before any image loads so that a mistyped path fails at
/// once, with a reason, rather than after a long batch (Foundation's write errors on Linux say
/// little more than "The operation could not be completed").
struct PNGOutput {
    let url: URL

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

    init(path: String) throws(CommandFailure) {
        // URL(fileURLWithPath:) drops a final "/": `--output thumbs/`, a folder not made yet, wrote a file `thumbs`.
        guard !path.hasSuffix("/") else { throw CommandFailure("cannot write \(path): a file name cannot end in /") }
        url = Inputs.fileURL(forPath: path)
        let folder = url.deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw CommandFailure("cannot write \(url.path): no folder \(folder)")
        }
        guard access(folder, W_OK) == 0 else {
            throw CommandFailure("cannot write \(url.path): \(String(cString: strerror(errno)))")
        }
        // The write is atomic: a new file renamed over the path. Over a device (/dev/null, /dev/stdout),
        // a FIFO or a socket that rename would put a regular file in its place (for root, /dev/null itself),
        // so only a regular file (or a link to one) is replaced; anything else at the path is refused.
        var status = stat()
        if stat(url.path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            let kind = status.st_mode & S_IFMT == S_IFDIR ? "is a directory" : "is not a regular file"
            throw CommandFailure("cannot write \(url.path): \(kind)")
        }
    }

    /// Throws when one of `outputs` is one of the local files among `inputs` (the same device and inode,
    /// so a link or another spelling of its path counts too): writing it would destroy that input.
    static func checkNoneOverwrites(_ inputs: [URL], outputs: [PNGOutput]) throws(UsageError) {
        func identity(_ path: String) -> [UInt64]? {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            return [UInt64(status.st_dev), UInt64(status.st_ino)]
        }
        let outputFiles = Dictionary(
            outputs.compactMap { output in identity(output.url.path).map { ($0, output) } },
            uniquingKeysWith: { first, _ in first })
        guard !outputFiles.isEmpty else { return }
        for input in inputs where input.isFileURL {
            if let id = identity(input.path), let output = outputFiles[id] {
                throw UsageError("\(output.url.path) is the input \(input.path): it would be overwritten")
            }
        }
    }

    /// Encodes `image` as RGBA PNG and writes it atomically, so a failed run leaves no half file.
    func write(_ image: Bitmap) throws(CommandFailure) {
        let data: Data
        do {
            data = try ImageEncoders.PNG().encode(image)
        } catch {
            throw CommandFailure("cannot encode \(url.path): \(error.description)")
        }
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw CommandFailure("cannot write \(url.path): \(error.localizedDescription)")
        }
    }
}
