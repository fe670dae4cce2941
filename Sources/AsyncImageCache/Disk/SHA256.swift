/// SHA-256 (FIPS 180-4), for naming cache files after their URL.
///
/// CryptoKit is Apple-only and no package outside the toolchain can be used, so the store carries
/// this small portable implementation. It is not used for anything security-related.
enum SHA256 {
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    typealias State = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)

    /// The 32-byte digest of `bytes`.
    static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let state = Array(bytes).withUnsafeBufferPointer(hash)
        var result = [UInt8]()
        result.reserveCapacity(32)
        for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
            for shift in stride(from: 24, through: 0, by: -8) {
                result.append(UInt8(truncatingIfNeeded: word >> UInt32(shift)))
            }
        }
        return result
    }

    /// Hashes `message`: whole blocks straight from the buffer, the padded tail from the stack.
    /// Cache file names are hashed on the size-lookup path, so this avoids every heap allocation.
    private static func hash(_ message: UnsafeBufferPointer<UInt8>) -> State {
        var state: State = (
            0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
        )
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { schedule in
            let wholeBlocks = message.count / 64
            for block in 0..<wholeBlocks {
                compress(
                    UnsafeBufferPointer(rebasing: message[(block * 64)..<(block * 64 + 64)]), schedule: schedule,
                    state: &state)
            }
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { tail in
                let remainder = message.count - wholeBlocks * 64
                let tailLength = remainder < 56 ? 64 : 128
                tail.initialize(repeating: 0)
                for index in 0..<remainder { tail[index] = message[wholeBlocks * 64 + index] }
                tail[remainder] = 0x80
                let bitLength = UInt64(message.count) &* 8
                for index in 0..<8 {
                    tail[tailLength - 1 - index] = UInt8(truncatingIfNeeded: bitLength >> UInt64(index * 8))
                }
                let tailBytes = UnsafeBufferPointer(tail)
                compress(UnsafeBufferPointer(rebasing: tailBytes[0..<64]), schedule: schedule, state: &state)
                if tailLength == 128 {
                    compress(UnsafeBufferPointer(rebasing: tailBytes[64..<128]), schedule: schedule, state: &state)
                }
            }
        }
        return state
    }

    /// Mixes one 64-byte block into `state`.
    private static func compress(
        _ block: UnsafeBufferPointer<UInt8>, schedule: UnsafeMutableBufferPointer<UInt32>, state: inout State
    ) {
        for word in 0..<16 {
            let offset = block.startIndex + word * 4
            schedule[word] =
                UInt32(block[offset]) << 24 | UInt32(block[offset + 1]) << 16
                | UInt32(block[offset + 2]) << 8 | UInt32(block[offset + 3])
        }
        for word in 16..<64 {
            let s0 =
                rotateRight(schedule[word - 15], 7) ^ rotateRight(schedule[word - 15], 18) ^ (schedule[word - 15] >> 3)
            let s1 =
                rotateRight(schedule[word - 2], 17) ^ rotateRight(schedule[word - 2], 19) ^ (schedule[word - 2] >> 10)
            schedule[word] = schedule[word - 16] &+ s0 &+ schedule[word - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = state
        roundConstants.withUnsafeBufferPointer { constants in
            for round in 0..<64 {
                let sum1 = rotateRight(e, 6) ^ rotateRight(e, 11) ^ rotateRight(e, 25)
                let choice = (e & f) ^ (~e & g)
                let temp1 = h &+ sum1 &+ choice &+ constants[round] &+ schedule[round]
                let sum0 = rotateRight(a, 2) ^ rotateRight(a, 13) ^ rotateRight(a, 22)
                let majority = (a & b) ^ (a & c) ^ (b & c)
                (h, g, f, e, d, c, b, a) = (g, f, e, d &+ temp1, c, b, a, temp1 &+ sum0 &+ majority)
            }
        }
        state = (
            state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g,
            state.7 &+ h
        )
    }

    /// The digest of `text`'s UTF-8 bytes as 64 lowercase hex digits.
    static func hexDigest(of text: String) -> String {
        String(unsafeUninitializedCapacity: 64) { output in
            writeHexDigest(of: text, into: output)
            return 64
        }
    }

    /// Writes the 64 lowercase hex digits of the digest of `text`'s UTF-8 bytes into `output`.
    static func writeHexDigest(of text: String, into output: UnsafeMutableBufferPointer<UInt8>) {
        precondition(output.count >= 64)
        var text = text
        let state = text.withUTF8(hash)
        func write(_ word: UInt32, at wordIndex: Int) {
            for nibble in 0..<8 {
                let value = UInt8(truncatingIfNeeded: word >> UInt32(28 - nibble * 4)) & 0x0f
                output[output.startIndex + wordIndex * 8 + nibble] = value < 10 ? 0x30 + value : 0x57 + value
            }
        }
        write(state.0, at: 0)
        write(state.1, at: 1)
        write(state.2, at: 2)
        write(state.3, at: 3)
        write(state.4, at: 4)
        write(state.5, at: 5)
        write(state.6, at: 6)
        write(state.7, at: 7)
    }

    private static func rotateRight(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value >> count) | (value << (32 - count))
    }
}
