import Foundation

/// Builds binary test input field by field, so that each test spells out the structure it feeds in.
struct ByteWriter {
    var bytes: [UInt8] = []

    var data: Data { Data(bytes) }

    mutating func append(_ more: [UInt8]) { bytes += more }

    mutating func ascii(_ text: String) { bytes += Array(text.utf8) }

    mutating func uint16(_ value: Int, bigEndian: Bool) { integer(value, length: 2, bigEndian: bigEndian) }

    mutating func uint24LE(_ value: Int) { integer(value, length: 3, bigEndian: false) }

    mutating func uint32(_ value: Int, bigEndian: Bool) { integer(value, length: 4, bigEndian: bigEndian) }

    mutating func integer(_ value: Int, length: Int, bigEndian: Bool) {
        let little = (0..<length).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        bytes += bigEndian ? little.reversed() : little
    }

    /// Writes with a closure and returns the bytes.
    static func build(_ body: (inout ByteWriter) -> Void) -> [UInt8] {
        var writer = ByteWriter()
        body(&writer)
        return writer.bytes
    }
}

extension [UInt8] {
    /// Where `pattern` first occurs, for tests that edit a fixture's boxes or chunks in place.
    func offset(of pattern: [UInt8]) -> Int? {
        guard pattern.count <= count else { return nil }
        return (0...(count - pattern.count)).first { self[$0..<($0 + pattern.count)].elementsEqual(pattern) }
    }

    /// `value` as four big-endian bytes.
    static func uint32BE(_ value: Int) -> [UInt8] {
        ByteWriter.build { $0.uint32(value, bigEndian: true) }
    }
}
