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
