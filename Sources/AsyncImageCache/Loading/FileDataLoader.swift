import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the bytes of a local `file:` URL in place: the file is never copied anywhere.
///
/// The read is synchronous inside an `async` function, so callers run it off the main thread and
/// off any coordinating actor. Cancellation is checked before the read and between chunks of it.
/// A file whose name is bytes that are not UTF-8, as Linux allows, is named with percent escapes:
/// `file:///photos/caf%E9.jpg` reads `caf\xE9.jpg`.
///
/// ```swift
/// let bytes = try await FileDataLoader().loadData(for: URL(fileURLWithPath: "/tmp/photo.jpg"))
/// ```
public struct FileDataLoader: DataLoading {
    /// The largest file the loader reads, in bytes, or `nil` (the default) for no limit.
    public var maximumBytes: Int?

    /// Creates a loader.
    ///
    /// - Parameter maximumBytes: The largest file to read, in bytes; `nil`, the default, reads any size.
    ///   A larger file fails with ``ImageLoadingError/responseTooLarge(url:byteLimit:)``.
    public init(maximumBytes: Int? = nil) {
        self.maximumBytes = maximumBytes
    }

    /// Reads the whole file at `url`.
    ///
    /// - Throws: ``ImageLoadingError/unsupportedURL(_:)`` for a URL that is not a `file:` URL;
    ///   ``ImageLoadingError/fileUnavailable(path:reason:)`` when the file is missing, unreadable or not a
    ///   regular file (a directory, a device), or on another host (`file://server/...`: only a URL without
    ///   a host, or with `localhost`, names a file here), or for a path with a `%00` (no file name holds a NUL);
    ///   ``ImageLoadingError/responseTooLarge(url:byteLimit:)`` when it is larger than ``maximumBytes``;
    ///   ``ImageLoadingError/cancelled`` when the task is cancelled.
    public func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        guard url.isFileURL else { throw .unsupportedURL(url) }
        // Its path alone would read the local file of that name: `file://server/etc/passwd`, /etc/passwd.
        guard url.isLocalFileURL else {
            throw .fileUnavailable(
                path: FileSystemPath.description(of: url),
                reason: "is on another host (\(url.host ?? "")), not this one")
        }
        guard !Task.isCancelled else { throw .cancelled }
        let data = try readFile(url)
        // The bytes may be stale for a task cancelled during a long read: nobody wants them now.
        guard !Task.isCancelled else { throw .cancelled }
        return data
    }

    /// The size of a chunk between cancellation checks.
    private static let chunkBytes = 4 << 20

    private func readFile(_ url: URL) throws(ImageLoadingError) -> Data {
        let fileSystemPath = try FileSystemPath(url)
        let path = fileSystemPath.description
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, before the
        // check below could turn it away. It changes nothing for a regular file.
        let descriptor = fileSystemPath.withCString { open($0, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }
        guard descriptor >= 0 else { throw Self.unavailable(path, errno: errno) }
        defer { close(descriptor) }

        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Self.unavailable(path, errno: errno) }
        // Reading a directory fails, and a FIFO or device may block or never end: only regular files.
        switch status.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .fileUnavailable(path: path, reason: "is a directory")
        default: throw .fileUnavailable(path: path, reason: "is not a regular file")
        }
        let announced = Int(status.st_size)
        if let maximumBytes, announced > maximumBytes {
            throw .responseTooLarge(url: url, byteLimit: maximumBytes)
        }

        // The file may grow between fstat and read, so the loop reads until end-of-file, within the cap.
        // One spare byte lets the read that finds end-of-file fit without growing (and copying) a
        // buffer the size of the whole file. The buffer is not zeroed first (`Data(count:)` would
        // write every page once before `read` writes it again) and becomes the Data without a copy.
        // A sparse file may say any size up to Int64.max, past any buffer: out of memory, as malloc says of
        // a slightly smaller one, not an overflow that ends the process.
        let (wanted, overflows) = announced.addingReportingOverflow(1)
        guard !overflows, var buffer = malloc(wanted) else {
            throw .fileUnavailable(path: path, reason: "out of memory")
        }
        var capacity = wanted
        var handedOver = false
        defer { if !handedOver { free(buffer) } }
        var received = 0
        while true {
            if received == capacity {
                let (grown, overflows) = capacity.addingReportingOverflow(max(Self.chunkBytes / 16, capacity / 2))
                guard !overflows, let larger = realloc(buffer, grown) else {
                    throw .fileUnavailable(path: path, reason: "out of memory")
                }
                buffer = larger
                capacity = grown
            }
            let count = read(descriptor, buffer + received, min(Self.chunkBytes, capacity - received))
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.unavailable(path, errno: errno)
            }
            if count == 0 { break }
            received += count
            if let maximumBytes, received > maximumBytes {
                throw .responseTooLarge(url: url, byteLimit: maximumBytes)
            }
            if Task.isCancelled { throw .cancelled }
        }
        guard received > 0 else { return Data() }
        handedOver = true
        return Data(bytesNoCopy: buffer, count: received, deallocator: .free)
    }

    private static func unavailable(_ path: String, errno code: Int32) -> ImageLoadingError {
        .fileUnavailable(path: path, reason: String(cString: strerror(code)))
    }
}
