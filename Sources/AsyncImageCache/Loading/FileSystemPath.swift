import Foundation

/// The path of a local `file:` URL as the POSIX calls take it: the bytes its percent escapes stand
/// for, NUL-terminated, and a form of it for messages.
///
/// On Linux a file name is bytes, and some are not UTF-8 (`caf\xE9.jpg`, in Latin-1). A `file:` URL
/// can name such a file only with percent escapes (`file:///photos/caf%E9.jpg`), and Foundation
/// cannot give its path as a `String`: `path` is `""`, and opening that reads no file at all. The
/// bytes are decoded here from the percent-encoded path instead. A path whose bytes are UTF-8 is
/// exactly `url.path`, as it always was: its escaped slashes (`%2F`) kept as written, its trailing
/// slashes dropped; a path whose bytes are not is decoded the same way. (SPI for `aic`, which reads
/// local files itself.)
@_spi(Tools) public struct FileSystemPath: Sendable, CustomStringConvertible {
    /// The path's bytes, ending with the one NUL that ends a C string.
    let cString: [CChar]
    /// The path for messages: `url.path`, or the percent-encoded path when its bytes are not UTF-8
    /// (`/photos/caf%E9.jpg`), which says which bytes they are where `url.path` is empty.
    public let description: String

    /// The path of the local file `url` names (its host is not looked at).
    ///
    /// - Throws: ``ImageLoadingError/fileUnavailable(path:reason:)`` for a path with a `%00`: no file
    ///   name holds a NUL, and the C string would end there, naming another file.
    public init(_ url: URL) throws(ImageLoadingError) {
        let encoded = url.path(percentEncoded: true)
        // Without an escape the bytes are the path string's own, UTF-8 by construction: `url.path`, as below,
        // without decoding and checking them byte by byte (most paths; this runs on every local size lookup).
        let percent = UInt8(ascii: "%")
        let hasEscape =
            encoded.utf8.withContiguousStorageIfAvailable { $0.contains(percent) } ?? encoded.utf8.contains(percent)
        if !hasEscape {
            description = url.path
            cString = Array(description.utf8CString)
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoded.utf8.count + 1)
        var rest = encoded.utf8[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%"), rest.count >= 2,
                let high = DataURL.hexValue(rest[rest.startIndex]),
                let low = DataURL.hexValue(rest[rest.index(after: rest.startIndex)])
            else {
                bytes.append(byte)
                continue
            }
            let decoded = high << 4 | low
            guard decoded != 0 else {
                throw .fileUnavailable(path: encoded, reason: "its path holds a NUL byte (%00), which no file name can")
            }
            if decoded == UInt8(ascii: "/") {
                bytes.append(byte)  // "%2F" stays as written, as in `url.path`: a slash would split the name
            } else {
                bytes.append(decoded)
                rest.removeFirst(2)
            }
        }
        // A repair changes the bytes of anything but valid UTF-8. (`String(validating:as:)` would say so
        // directly, but it needs iOS 18 and macOS 15, past this package's platforms.)
        if String(decoding: bytes, as: UTF8.self).utf8.elementsEqual(bytes) {
            description = url.path
            cString = Array(description.utf8CString)
            return
        }
        while bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        description = encoded
        cString = bytes.map { CChar(bitPattern: $0) } + [0]
    }

    /// ``description`` of `url`'s path, or its percent-encoded path where it has none (a `%00` in it):
    /// for messages about a file that is not opened.
    static func description(of url: URL) -> String {
        (try? FileSystemPath(url))?.description ?? url.path(percentEncoded: true)
    }

    /// Calls `body` with the path as a C string.
    public func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try cString.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }
}
