@_spi(Tools) import AsyncImageCache
import Foundation

/// `aic info INPUT [--json]`: an image's displayed size and format, read from its header.
///
/// A local file is never read past its header. A URL goes through the store: the disk tier
/// answers for a remote image it already holds, otherwise the store's own loader fetches it (with
/// the store's timeout and size cap).
enum InfoCommand: Subcommand {
    static let name = "info"
    static let summary = "print an image's size and format without decoding it"
    static let synopsis = "aic info INPUT [--json]"
    static let details = """
        Prints WIDTHxHEIGHT and the format. Sizes are as displayed: for a JPEG whose EXIF orientation
        turns it, the orientation and the stored size follow, e.g.
          1800x1200 JPEG (orientation 6, stored 1200x1800)

        INPUT is a file path or an http:, https:, file: or data: URL. For a local file only the header
        is read; a remote image comes from the disk cache when it is there.

        OPTIONS
          --json    print one JSON object instead: width, height, format, orientation (1-8),
                    storedWidth, storedHeight, bytes (the size of the file or download)

        EXAMPLES
          aic info photo.jpg
          aic info https://example.com/photo.jpg --json
        """
    static let options: Set<String> = []
    static let flags: Set<String> = ["--json"]

    static func run(_ arguments: Arguments) async throws {
        let url = try Inputs.url(for: try arguments.single("INPUT", of: name))
        let (header, byteCount) = try await read(url)
        if arguments.flag("--json") {
            let object = JSONObject([
                "width": .int(header.displaySize.width), "height": .int(header.displaySize.height),
                "format": .string(header.format.description), "orientation": .int(header.orientation.rawValue),
                "storedWidth": .int(header.storedSize.width), "storedHeight": .int(header.storedSize.height),
                "bytes": .int(byteCount),
            ])
            Console.out(object.text)
        } else {
            Console.out(line(for: header))
        }
    }

    /// `1024x768 JPEG`, or `1800x1200 JPEG (orientation 6, stored 1200x1800)` when not upright.
    static func line(for header: ImageHeader) -> String {
        let text = "\(header.displaySize) \(header.format)"
        guard header.orientation != .up else { return text }
        return text + " (orientation \(header.orientation.rawValue), stored \(header.storedSize))"
    }

    /// The header of the image at `url` and the size of the whole file or download in bytes.
    private static func read(_ url: URL) async throws -> (ImageHeader, Int) {
        if url.isLocalFileURL { return try LocalFile.header(ofFileAt: url) }
        let store = try Inputs.store()
        let data: Data
        if let cached = store.cachedOriginalBytes(for: url) {
            data = cached.data
        } else {
            do {
                data = try await store.configuration.dataLoader.loadData(for: url)
            } catch {
                throw CommandFailure(Inputs.describe(error, loading: url))
            }
        }
        do {
            return (try ImageHeader.parse(data), data.count)
        } catch {
            throw CommandFailure(Inputs.describe(.decodingFailed(error), loading: url))
        }
    }
}

/// Reads the start of a local file, and no more than its header needs.
enum LocalFile {
    /// The first bytes tried; a header that runs past them (a JPEG's EXIF block can be large) gets
    /// twice as many, up to ``maximumPrefix``.
    static let initialPrefix = 16 * 1024
    static let maximumPrefix = 16 * 1024 * 1024

    /// The header of the local file `url` names and the file's size in bytes.
    ///
    /// Fails with the store's own wording: `cannot read PATH: REASON` for a file that is missing,
    /// unreadable or a folder, and the header reader's reason for one that is not an image.
    static func header(ofFileAt url: URL) throws(CommandFailure) -> (ImageHeader, Int) {
        // The path as the store opens it: its bytes, which need not be UTF-8 (`caf%E9.jpg`).
        let fileSystemPath: FileSystemPath
        do {
            fileSystemPath = try FileSystemPath(url)
        } catch {
            throw CommandFailure(error.description)
        }
        let path = fileSystemPath.description
        // O_NONBLOCK: opening a FIFO would otherwise wait for a writer before fstat could refuse it.
        let descriptor = fileSystemPath.withCString { open($0, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }
        guard descriptor >= 0 else { throw unavailable(path, String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw unavailable(path, String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw unavailable(path, status.st_mode & S_IFMT == S_IFDIR ? "is a directory" : "is not a regular file")
        }
        let byteCount = Int(status.st_size)
        var length = initialPrefix
        while true {
            let prefix = try read(descriptor, upTo: min(length, byteCount), path: path)
            do {
                return (try ImageHeader.parse(prefix), byteCount)
            } catch  where error.reason == .truncated && prefix.count < byteCount && length < maximumPrefix {
                length *= 2
            } catch {
                throw CommandFailure(Inputs.describe(.decodingFailed(error), loading: url))
            }
        }
    }

    private static func read(_ descriptor: Int32, upTo length: Int, path: String) throws(CommandFailure) -> Data {
        var data = Data(count: length)
        var filled = 0
        while filled < length {
            let count = data.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + filled, length - filled, off_t(filled))
            }
            if count < 0, errno == EINTR { continue }
            if count < 0 { throw unavailable(path, String(cString: strerror(errno))) }
            if count == 0 { break }  // the file shrank since fstat
            filled += count
        }
        data.count = filled
        return data
    }

    private static func unavailable(_ path: String, _ reason: String) -> CommandFailure {
        CommandFailure(ImageLoadingError.fileUnavailable(path: path, reason: reason).description)
    }
}
