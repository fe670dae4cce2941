import Foundation

/// A bounds-checked window onto the first bytes of an image, for the header reader.
///
/// Every read past the end throws ``ImageDecodingError/Reason/truncated`` for ``format``, which is
/// what a caller reading a file in growing pieces needs to hear. Offsets are relative to the window,
/// so a reader over a `Data` slice or over one box of a container looks the same.
struct HeaderBytes {
    /// The bytes; `start` is an absolute index into them.
    private let data: Data
    private let start: Int
    /// The number of bytes in the window.
    let count: Int
    /// The format that errors name.
    let format: ImageFormat?

    init(_ data: Data, format: ImageFormat?) {
        self.data = data
        self.start = data.startIndex
        self.count = data.count
        self.format = format
    }

    private init(data: Data, start: Int, count: Int, format: ImageFormat?) {
        self.data = data
        self.start = start
        self.count = count
        self.format = format
    }

    /// The same bytes with errors naming `format`.
    func claiming(_ format: ImageFormat) -> HeaderBytes {
        HeaderBytes(data: data, start: start, count: count, format: format)
    }

    /// The error for data that ends too early.
    var truncated: ImageDecodingError { ImageDecodingError(format: format, reason: .truncated) }

    /// The error for malformed data.
    func corrupt(_ message: String) -> ImageDecodingError {
        ImageDecodingError(format: format, reason: .corrupt(message))
    }

    /// Whether `length` bytes starting at `offset` lie inside the window (overflow-safe).
    func contains(_ offset: Int, length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= count && length <= count - offset
    }

    /// Throws `.truncated` unless `length` bytes starting at `offset` are present.
    func require(_ offset: Int, length: Int) throws(ImageDecodingError) {
        guard contains(offset, length: length) else { throw truncated }
    }

    /// The window of `length` bytes at `offset`, sharing storage with this one.
    func window(at offset: Int, length: Int) throws(ImageDecodingError) -> HeaderBytes {
        try require(offset, length: length)
        return HeaderBytes(data: data, start: start + offset, count: length, format: format)
    }

    /// The bytes of the window, sharing storage.
    var bytes: Data { data[start..<(start + count)] }

    /// The byte at `offset`.
    func byte(at offset: Int) throws(ImageDecodingError) -> UInt8 {
        try require(offset, length: 1)
        return data[start + offset]
    }

    /// An unsigned integer of `length` bytes (at most 8) at `offset`.
    func unsigned(at offset: Int, length: Int, bigEndian: Bool) throws(ImageDecodingError) -> UInt64 {
        try require(offset, length: length)
        // One look at the storage for all the bytes: each `Data` subscript is an access the exclusivity
        // checks time, and the header reader's reads are mostly these.
        let first = start - data.startIndex + offset
        return data.withUnsafeBytes { raw in
            var value: UInt64 = 0
            for index in 0..<length {
                value = value << 8 | UInt64(raw[first + (bigEndian ? index : length - 1 - index)])
            }
            return value
        }
    }

    /// The code of the JPEG marker whose 0xFF is the byte at `offset`, when the byte after it is a code (neither
    /// 0x00, a stuffed byte, nor 0xFF, a fill byte); `nil` otherwise, and when the window ends first. The
    /// segment walk's common case, read in one look.
    func jpegMarkerCode(at offset: Int) -> UInt8? {
        guard contains(offset, length: 2) else { return nil }
        let first = start - data.startIndex + offset
        return data.withUnsafeBytes { raw in
            let code = raw[first + 1]
            return raw[first] == 0xFF && code != 0x00 && code != 0xFF ? code : nil
        }
    }

    /// A big-endian 16-bit value, as JPEG, PNG and ISO-BMFF store them.
    func uint16BE(at offset: Int) throws(ImageDecodingError) -> Int {
        Int(try unsigned(at: offset, length: 2, bigEndian: true))
    }

    /// A big-endian 32-bit value.
    func uint32BE(at offset: Int) throws(ImageDecodingError) -> Int {
        Int(try unsigned(at: offset, length: 4, bigEndian: true))
    }

    /// A little-endian 16-bit value, as GIF, BMP and RIFF store them.
    func uint16LE(at offset: Int) throws(ImageDecodingError) -> Int {
        Int(try unsigned(at: offset, length: 2, bigEndian: false))
    }

    /// A little-endian 24-bit value (WebP VP8X canvas sizes).
    func uint24LE(at offset: Int) throws(ImageDecodingError) -> Int {
        Int(try unsigned(at: offset, length: 3, bigEndian: false))
    }

    /// A little-endian 32-bit value.
    func uint32LE(at offset: Int) throws(ImageDecodingError) -> Int {
        Int(try unsigned(at: offset, length: 4, bigEndian: false))
    }

    /// A little-endian signed 32-bit value (BMP sizes may be negative).
    func int32LE(at offset: Int) throws(ImageDecodingError) -> Int {
        Int(Int32(truncatingIfNeeded: try unsigned(at: offset, length: 4, bigEndian: false)))
    }

    /// Whether the bytes at `offset` are `expected`; false when the window ends first.
    func matches(_ expected: [UInt8], at offset: Int) -> Bool {
        guard contains(offset, length: expected.count) else { return false }
        return expected.indices.allSatisfy { data[start + offset + $0] == expected[$0] }
    }

    /// Whether the bytes at `offset` spell the ASCII text `text`, such as a chunk or box type.
    func matches(_ text: String, at offset: Int) -> Bool {
        matches(Array(text.utf8), at: offset)
    }

    /// The four bytes at `offset` as text, for box and chunk types; bytes that are not printable ASCII
    /// (control characters, DEL, past ASCII) become `?`, as the text may go into an error message.
    func fourCC(at offset: Int) throws(ImageDecodingError) -> String {
        try require(offset, length: 4)
        let bytes = (0..<4).map { data[start + offset + $0] }
        return String(decoding: bytes.map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// Whether the window so far agrees with `pattern` (nil entries match any byte) up to its length.
    func isPrefix(of pattern: [UInt8?]) -> Bool {
        let length = min(count, pattern.count)
        return (0..<length).allSatisfy { pattern[$0] == nil || pattern[$0] == data[start + $0] }
    }
}
