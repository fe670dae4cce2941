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

/// A small deterministic random number generator (SplitMix64), so failures can be reproduced.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
