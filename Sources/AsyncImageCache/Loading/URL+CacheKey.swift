import Foundation

extension URL {
    /// The key of this URL in the memory tiers and the in-flight table: its absolute string with the
    /// scheme in lower case (schemes are case-insensitive: `HTTP://h/a.jpg` is `http://h/a.jpg`), the
    /// same string whose SHA-256 names the disk file.
    var cacheKey: String {
        let text = absoluteString
        let bytes = text.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
            bytes[..<colon].contains(where: Self.isUppercaseLetter), bytes[..<colon].allSatisfy(Self.isSchemeByte)
        else { return text }
        return text[..<colon].lowercased() + text[colon...]
    }

    private static func isUppercaseLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// Letters, digits, "+", "-" and ".", what RFC 3986 allows in a scheme.
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isUppercaseLetter(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "+-.".utf8.contains(byte)
    }

    /// This URL with its scheme in lower case, as URLSession needs it (it refuses `HTTP://`); the URL
    /// itself when its scheme already is.
    var withLowercaseScheme: URL {
        let key = cacheKey
        guard key != absoluteString else { return self }
        return URL(string: key) ?? self
    }

    /// Whether the URL names a file on this machine: a `file:` URL with no host, or `localhost`
    /// (RFC 8089). `file://server/photo.jpg` names one on another machine, which is never read.
    /// (SPI for `aic`, which reads local files itself.)
    @_spi(Tools) public var isLocalFileURL: Bool {
        guard isFileURL else { return false }
        guard let host, !host.isEmpty else { return true }
        return host.lowercased() == "localhost"
    }

    /// Whether the URL is fetched over the network (and so kept in the disk tier).
    var isRemote: Bool {
        let scheme = self.scheme?.lowercased()
        return scheme == "http" || scheme == "https"
    }
}
