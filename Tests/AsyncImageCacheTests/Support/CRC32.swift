/// The CRC-32 of ISO 3309 that PNG puts after every chunk (polynomial 0xEDB88320, reflected).
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        (0..<8).reduce(UInt32(index)) { value, _ in value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
    }

    /// The checksum of `bytes`; `CRC32.checksum(Array("IEND".utf8)) == 0xAE42_6082`.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        ~bytes.reduce(~UInt32(0)) { crc, byte in table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    }
}
