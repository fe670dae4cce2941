import CSHA256

/// SHA-256 (FIPS 180-4), for naming cache files after their URL.
///
/// CryptoKit is Apple-only and no package outside the toolchain can be used, so the store carries
/// this small implementation, in C (`CSHA256`): portable rounds, and on x86-64 the processor's SHA
/// instructions when it has them, since every size lookup that reaches the disk hashes a URL. It is
/// not used for anything security-related.
enum SHA256 {
    /// The eight words of the final state, through `hash` (`csha256_hash` or, for tests,
    /// `csha256_hash_portable`).
    private static func state(
        of bytes: UnsafeBufferPointer<UInt8>,
        _ hash: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt32>?) -> Void = csha256_hash
    ) -> [UInt32] {
        [UInt32](unsafeUninitializedCapacity: 8) { words, count in
            hash(bytes.baseAddress, bytes.count, words.baseAddress)
            count = 8
        }
    }

    /// The 32-byte digest of `bytes`.
    static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        bigEndianBytes(of: Array(bytes).withUnsafeBufferPointer { state(of: $0) })
    }

    /// The 32-byte digest of `bytes` by the portable rounds alone, whatever the processor (for tests).
    static func portableDigest(_ bytes: [UInt8]) -> [UInt8] {
        bigEndianBytes(of: bytes.withUnsafeBufferPointer { state(of: $0, csha256_hash_portable) })
    }

    /// The digest's bytes: the state's words, each big-endian.
    private static func bigEndianBytes(of words: [UInt32]) -> [UInt8] {
        words.flatMap { word in stride(from: 24, through: 0, by: -8).map { UInt8(truncatingIfNeeded: word >> $0) } }
    }

    /// Whether ``digest(_:)`` uses the processor's SHA instructions here.
    static var isAccelerated: Bool { csha256_is_accelerated() != 0 }

    /// The digest of `text`'s UTF-8 bytes as 64 lowercase hex digits.
    static func hexDigest(of text: String) -> String {
        String(unsafeUninitializedCapacity: 64) { output in
            writeHexDigest(of: text, into: output)
            return 64
        }
    }

    /// Writes the 64 lowercase hex digits of the digest of `text`'s UTF-8 bytes into `output`, with no
    /// heap allocation (the state is on the stack).
    static func writeHexDigest(of text: String, into output: UnsafeMutableBufferPointer<UInt8>) {
        precondition(output.count >= 64)
        var text = text
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 8) { words in
            text.withUTF8 { bytes in csha256_hash(bytes.baseAddress, bytes.count, words.baseAddress) }
            for (wordIndex, word) in words.enumerated() {
                for nibble in 0..<8 {
                    let value = UInt8(truncatingIfNeeded: word >> UInt32(28 - nibble * 4)) & 0x0f
                    output[output.startIndex + wordIndex * 8 + nibble] = value < 10 ? 0x30 + value : 0x57 + value
                }
            }
        }
    }
}
