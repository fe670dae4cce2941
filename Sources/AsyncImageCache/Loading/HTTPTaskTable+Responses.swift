import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The response header fields and transport errors an ``HTTPTaskTable`` load reads, in words a caller
/// can act on.
extension HTTPTaskTable {
    /// The length a `Content-Length` field gives (RFC 9110 8.6): digits, or a list of one such value
    /// repeated (two lines of it joined); `Int64.max` for digits past it, more than any body can be.
    /// `nil` for anything else.
    static func contentLength(_ field: String) -> Int64? {
        let values = Set(
            field.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        guard values.count == 1, let value = values.first, !value.isEmpty,
            value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return Int64(value) ?? .max
    }

    /// The content codings of `response`'s body as its `Content-Encoding` names them (`gzip`,
    /// `deflate, br`); `nil` for none, `identity` alone, or an empty value.
    static func contentCoding(of response: HTTPURLResponse) -> String? {
        guard let value = response.value(forHTTPHeaderField: "Content-Encoding") else { return nil }
        let codings = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && $0.lowercased() != "identity" }
        return codings.isEmpty ? nil : codings.joined(separator: ", ")
    }

    /// Why URLSession refused `url` as a bad URL, which its own error does not say ("error -1000"). On
    /// Linux, swift-corelibs-foundation refuses a URL whose host it and libcurl read differently, and
    /// Swift 6.3's reads every IPv6 literal host that way (`http://[::1]/`: swift-corelibs-foundation
    /// issue 5496).
    static func badURL(_ url: URL) -> String {
        #if !canImport(Darwin)
        if let host = url.host, host.contains(":") {
            return "URLSession on Linux cannot load a URL whose host is an IPv6 address (\(host)); use a host name"
        }
        #endif
        return "URLSession refused the URL as malformed"
    }

    /// What `error`, which ended a download, says went wrong. On Linux, a response header that
    /// swift-corelibs-foundation cannot read makes its header callback refuse it, and the error then
    /// carries only libcurl's words for that refusal: for a status line without a reason phrase, lines
    /// ended by LF alone or bytes that are not UTF-8, "Failed writing header" (libcurl 7, Debian 12) or
    /// "Failure writing output to destination, passed N returned 0" (libcurl 8, Debian 13); for a header
    /// line over libcurl's 100 KB limit, "Out of memory" (libcurl 7) or "A value or data field grew larger
    /// than allowed" (libcurl 8.6 and later). Before any response those words are turned into what they
    /// mean; anything else keeps the error's own description.
    static func transportDescription(of error: any Error, code: Int?, afterResponse: Bool) -> String {
        let text = error.localizedDescription
        #if canImport(FoundationNetworking)
        if code == NSURLErrorUnknown && !afterResponse {
            if text == "Failed writing header" || text.hasPrefix("Failure writing output to destination") {
                return "the response header could not be read: URLSession on Linux reads only a status line "
                    + "with a reason phrase and header lines of UTF-8 text ended by CRLF (libcurl: \(text))"
            }
            if text == "Out of memory" || text == "A value or data field grew larger than allowed" {
                return "the response header could not be read: libcurl reports a header line over its 100 KB limit "
                    + "as \"\(text)\""
            }
        }
        #endif
        return text
    }

    /// The first byte and the whole length of a `Content-Range: bytes <first>-<last>/<length>`; the
    /// length `nil` for `*` (unknown). `nil` for anything else.
    static func contentRange(_ value: String) -> (first: Int, length: Int?)? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let parts = text.dropFirst("bytes ".count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].trimmingCharacters(in: .whitespaces).split(
            separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]), first <= last else {
            return nil
        }
        let length = parts[1].trimmingCharacters(in: .whitespaces)
        if length == "*" { return (first, nil) }
        guard let whole = Int(length), last < whole else { return nil }
        return (first, whole)
    }
}
