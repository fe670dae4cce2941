import Foundation
import Testing

@testable import AsyncImageCache

/// Vectors from NIST's FIPS 180-4 examples (and the one-million-"a" message).
@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        (
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
        ),
    ])
    func digestsMatchThePublishedVectors(message: String, expected: String) {
        #expect(SHA256.hexDigest(of: message) == expected)
        // The portable rounds too, which processors without SHA instructions use.
        let portable = SHA256.portableDigest(Array(message.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(portable == expected)
    }

    /// The processor's SHA instructions, where this machine has them, give the portable rounds' digest for
    /// every length through four blocks and the padding's one- and two-block tails.
    @Test func theAcceleratedAndPortableRoundsAgree() {
        var generator = SystemRandomNumberGenerator()
        for length in Array(0...300) + [1000, 4096, 65_537] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(SHA256.digest(bytes) == SHA256.portableDigest(bytes), "length \(length)")
        }
        print("SHA-256 with the processor's SHA instructions: \(SHA256.isAccelerated)")
    }

    @Test func aMillionRepetitionsOfAMatchThePublishedVector() {
        #expect(
            SHA256.hexDigest(of: String(repeating: "a", count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func messagesAroundTheBlockBoundaryAreDistinct() {
        // 55, 56 and 64 bytes exercise the padding rules.
        let digests = [55, 56, 63, 64, 65].map { SHA256.hexDigest(of: String(repeating: "x", count: $0)) }
        #expect(Set(digests).count == digests.count)
        #expect(digests.allSatisfy { $0.count == 64 })
    }
}
