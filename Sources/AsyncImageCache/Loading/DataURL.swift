import Foundation

/// A parsed RFC 2397 `data:` URL: `data:[<media type>][;<parameter>=<value>]*[;base64],<payload>`.
///
/// Both payload forms are accepted: base64 (`;base64`, percent escapes and whitespace allowed inside,
/// padding optional) and percent-encoded bytes. Parsing is linear in the length of the URL.
///
/// ```swift
/// let parsed = try DataURL(string: "data:image/png;base64,iVBORw0KGgo=")
/// print(parsed.mediaType)  // image/png
/// ```
public struct DataURL: Sendable, Equatable {
    /// The media type with its parameters as written, e.g. `image/png` or `text/plain;charset=utf-8`;
    /// `text/plain;charset=US-ASCII` when the URL names none, as RFC 2397 specifies.
    public let mediaType: String
    /// Whether the payload was base64-encoded.
    public let isBase64: Bool
    /// The decoded payload.
    public let data: Data

    /// Parses `url.absoluteString`.
    ///
    /// - Throws: ``ImageLoadingError/invalidDataURL(reason:)`` when the URL is not a well-formed
    ///   `data:` URL.
    public init(url: URL) throws(ImageLoadingError) {
        // The absolute string is the URL as written: no component accessor re-encodes or drops any of it.
        try self.init(string: url.absoluteString)
    }

    /// Parses the text of a `data:` URL; a fragment (from `#` on) is not part of the data.
    ///
    /// - Throws: ``ImageLoadingError/invalidDataURL(reason:)`` when the text is not a well-formed
    ///   `data:` URL.
    public init(string: String) throws(ImageLoadingError) {
        // A "#" starts the fragment (RFC 3986 3.5), which is not part of the data.
        let bytes = Array(string.utf8.prefix { $0 != UInt8(ascii: "#") })
        let scheme = Array("data:".utf8)
        // Letters in either case (RFC 3986 3.1); the colon itself (0x1A | 0x20 is a colon as well).
        let matches = { (byte: UInt8, wanted: UInt8) in
            byte == wanted || (wanted != UInt8(ascii: ":") && byte | 0x20 == wanted)
        }
        guard bytes.count >= scheme.count, zip(bytes, scheme).allSatisfy(matches) else {
            throw .invalidDataURL(reason: "the scheme is not data:")
        }
        guard let comma = bytes[scheme.count...].firstIndex(of: UInt8(ascii: ",")) else {
            throw .invalidDataURL(reason: "no comma separates the header from the payload")
        }
        // Split before decoding: an escaped ";" (%3B) is data inside a parameter, not a separator,
        // so it can neither end a parameter nor make the ";base64" marker.
        let parts = bytes[scheme.count..<comma].split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
        isBase64 = parts.count > 1 && String(decoding: parts[parts.count - 1], as: UTF8.self).lowercased() == "base64"
        var parameters: [Substring] = []
        for part in parts.dropLast(isBase64 ? 1 : 0) {
            parameters.append(Substring(String(decoding: try Self.percentDecoded(part, what: "header"), as: UTF8.self)))
        }
        mediaType = try Self.mediaType(parameters)
        let payload = bytes[(comma + 1)...]
        data = isBase64 ? try Self.base64Decoded(payload) : Data(try Self.percentDecoded(payload, what: "payload"))
    }

    /// At most the first `maxLength` bytes of the payload of the `data:` URL `string`, decoding no more of
    /// it than they take (a header needs a few kilobytes of a payload that may be megabytes); `nil` when
    /// the URL is not well-formed as far as it is read. Bytes past the cut are not looked at, so a
    /// payload damaged further on still gives its start. Fewer than `maxLength` bytes means the payload
    /// ended: a caller reading more each time (a header past the first read) stops there.
    static func payloadPrefix(of string: String, maxLength: Int) -> Data? {
        let utf8 = string.utf8
        guard let comma = utf8.firstIndex(of: UInt8(ascii: ",")) else { return nil }
        let start = utf8.index(after: comma)
        // A decoded byte takes at most three characters (%XX), or 4/3 in base64 with room for line breaks.
        // Where that was not enough (base64 with its characters escaped takes four), twice as many.
        var limit = maxLength.multipliedReportingOverflow(by: 3).partialValue + 64
        while true {
            let end = utf8.index(start, offsetBy: limit, limitedBy: utf8.endIndex) ?? utf8.endIndex
            guard let (prefix, isWhole) = decodedPrefix(of: string, payload: start..<end) else { return nil }
            if isWhole || prefix.count >= maxLength { return prefix.prefix(maxLength) }
            let (doubled, overflow) = limit.multipliedReportingOverflow(by: 2)
            limit = overflow ? Int.max : doubled
        }
    }

    /// The bytes the characters of `string` in `payload` (from the start of the payload on) decode to, and
    /// whether they are the whole payload; `nil` when the URL is not well-formed as far as it is read.
    private static func decodedPrefix(of string: String, payload: Range<String.Index>) -> (Data, isWhole: Bool)? {
        var raw = Array(string.utf8[payload])
        // A fragment ends the payload (it is not part of the data).
        let fragment = raw.firstIndex(of: UInt8(ascii: "#"))
        if let fragment { raw.removeSubrange(fragment...) }
        let header = String(string[..<payload.lowerBound])
        guard payload.upperBound < string.endIndex, fragment == nil else {
            // The whole payload: parsed as a load would.
            return (try? DataURL(string: header + String(decoding: raw, as: UTF8.self))).map { ($0.data, true) }
        }
        // Checked as a load would, with an empty payload.
        guard let parsed = try? DataURL(string: header) else { return nil }
        // A cut through an escape leaves it out.
        if let percent = raw.suffix(2).lastIndex(of: UInt8(ascii: "%")) { raw.removeSubrange(percent...) }
        guard var text = try? percentDecoded(raw[...], what: "payload") else { return nil }
        guard parsed.isBase64 else { return (Data(text), false) }
        text.removeAll { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        text.removeLast(text.count % 4)
        return Data(base64Encoded: Data(text)).map { ($0, false) }
    }

    private static func mediaType(_ parameters: [Substring]) throws(ImageLoadingError) -> String {
        let type = parameters[0].trimmingCharacters(in: .whitespaces)
        if !type.isEmpty {
            let halves = type.split(separator: "/", omittingEmptySubsequences: false)
            guard halves.count == 2, !halves[0].isEmpty, !halves[1].isEmpty else {
                throw .invalidDataURL(reason: "the media type \"\(type.prefix(40))\" is not type/subtype")
            }
        }
        for parameter in parameters.dropFirst() where !parameter.contains("=") {
            throw .invalidDataURL(reason: "the parameter \"\(parameter.prefix(40))\" is not attribute=value")
        }
        if type.isEmpty {
            // RFC 2397: "data:;charset=utf-8,..." keeps its charset but implies text/plain.
            return (["text/plain"] + parameters.dropFirst().map(String.init)).joined(separator: ";")
                + (parameters.count == 1 ? ";charset=US-ASCII" : "")
        }
        return parameters.joined(separator: ";")
    }

    /// Replaces every `%XX` with its byte, in one pass; anything else is kept as its UTF-8 bytes.
    static func percentDecoded(_ bytes: ArraySlice<UInt8>, what: String) throws(ImageLoadingError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                index += 1
                continue
            }
            guard bytes.endIndex - index > 2, let high = hexValue(bytes[index + 1]),
                let low = hexValue(bytes[index + 2])
            else {
                throw .invalidDataURL(reason: "a \"%\" in the \(what) is not followed by two hex digits")
            }
            output.append(high << 4 | low)
            index += 3
        }
        return output
    }

    private static func base64Decoded(_ payload: ArraySlice<UInt8>) throws(ImageLoadingError) -> Data {
        // Percent escapes (e.g. %2B for "+") and line breaks are common in hand-written data: URLs.
        var text = try percentDecoded(payload, what: "payload")
        text.removeAll { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        // Padding only ends the text: Foundation decodes "=" inside the last group to bytes nobody encoded
        // ("QQ=A" to two bytes, "====" to one).
        let padding = text.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2, !text.dropLast(padding).contains(UInt8(ascii: "=")) else {
            throw .invalidDataURL(reason: "the payload is not valid base64")
        }
        let unpadded = text.count % 4
        guard unpadded != 1 else {
            throw .invalidDataURL(reason: "the base64 payload has an impossible length (\(text.count) characters)")
        }
        if unpadded != 0 { text.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 4 - unpadded)) }
        guard let data = Data(base64Encoded: Data(text)) else {
            throw .invalidDataURL(reason: "the payload is not valid base64")
        }
        return data
    }

    /// The value of a hex digit (`0`-`9`, `a`-`f`, `A`-`F`), `nil` for any other byte: for percent escapes
    /// here and in file URLs (``FileSystemPath``).
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
