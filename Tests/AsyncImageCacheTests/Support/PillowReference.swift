import Foundation

@testable import AsyncImageCache

/// What Pillow 13.0.0 decodes as the first (and second) frame of each GIF and WebP fixture, to check the
/// decoders against an implementation that is not theirs (Pillow has its own GIF reader; for WebP it uses
/// its own build of libwebp through the animation API).
///
/// Made by hand outside the project, for each file:
/// ```python
/// im = Image.open(path); im.seek(frame); b = bytearray(im.convert("RGBA").tobytes())
/// for p in range(0, len(b), 4):
///     if b[p + 3] == 0: b[p:p + 4] = b"\0\0\0\0"   # a transparent pixel's color is invisible
/// transparent = b[3::4].count(0); digest = hashlib.sha256(bytes(b)).hexdigest()
/// ```
enum PillowReference {
    struct Frames {
        let name: String
        /// The number of fully transparent pixels of frame 1.
        let transparentPixels: Int
        /// The SHA-256 of frame 1's RGBA pixels with transparent pixels cleared (see ``Bitmap/cleared``).
        let firstFrameDigest: String
        /// The same for frame 2 of an animation; `nil` for still images.
        let secondFrameDigest: String?
    }

    static let frames: [Frames] = table.map {
        Frames(name: $0.0, transparentPixels: $0.1, firstFrameDigest: $0.2, secondFrameDigest: $0.3)
    }

    static func frames(of name: String) -> Frames? { frames.first { $0.name == name } }

    private static let table: [(String, Int, String, String?)] = [
        ("alpha_gif_a.gif", 32768, "a05220d5d89b6632f3907f1ee193e92ac482aded52a67a543cab758c855dbec9", nil),
        (
            "anim-gr.gif", 0, "42f918becde1d7a197cb96baebd4e9f7217e4492414f277e39198c4a7d17721d",
            "d9ff8ebeb617ae638af9958d864976fec2c845877399febd5d4866b1ff72d818"
        ),
        (
            "any-disposal.gif", 910, "a5b22624a003b10fb89a4aaefade73fa5c50ffc23d96945617a009c65447f241",
            "a9af3925c2b8af79eaa30d6cde492979d2f93db3dfc2a50f6712ab4f4a1eda62"
        ),
        (
            "beacon.gif", 0, "72d724e2348d479c87488ff799adefb69dafd30559f17c0d82aee83c08541401",
            "74a4cf92ed25ec201fed93710123eaf41400f1f696adf93bf3db4ead41267404"
        ),
        ("interlaced-32x32.gif", 0, "62863eb5880684c551a57f8170e197f92b0cb4731aac3e4594e001447daeed34", nil),
        ("interlaced.gif", 0, "6e313bb8c71a5456536b9b4d73d15fe2625205397a88cd357cce51eb8ebc0ee1", nil),
        (
            "large-gif-anim-combine.gif", 451900, "70912e4f386af84993f3291b726436e855da01a0fd54bca920e156b326d9a4ff",
            "2c7833f03aecb53120aea94b8650a615b51dc4e9350c547db45111590c4a2901"
        ),
        (
            "mixed-disposal.gif", 910, "a5b22624a003b10fb89a4aaefade73fa5c50ffc23d96945617a009c65447f241",
            "a9af3925c2b8af79eaa30d6cde492979d2f93db3dfc2a50f6712ab4f4a1eda62"
        ),
        ("triangle-001.gif", 16928, "09560635b58adc58c702237984ab9b427b0b1cdaa5b76aa09a6865f39ddb2089", nil),
        ("video-001.5bpp.gif", 0, "ff1a32f95e5c1b191c2bf8d520a481cd9cf9962d966dc3b0ab8e648531bebaa8", nil),
        ("video-001.gif", 0, "2ebc5336b38a7c70552c1023dd77e06c3f53b85bd28b15e7cfe502809e0b5395", nil),
        ("video-001.interlaced.gif", 0, "2ebc5336b38a7c70552c1023dd77e06c3f53b85bd28b15e7cfe502809e0b5395", nil),
        ("video-005.gray.gif", 0, "2171b36034c879b903c3f92dd59d2d91936f1bdd01622271b142741256cfa5be", nil),
        (
            "anim.webp", 35731, "86fa5b5afb1f0f444bcd31b4f8a486316bdb79cbfefc46fb62f13db274c7f823",
            "0bc592e52c3aedf1062627e8c0dc66cee367195a0abdae7029ef0b972be748b6"
        ),
        ("blue-purple-pink.lossless.webp", 0, "fbe835d17ea7551b66fe6959441dc065151ed8699134f3b3f07b1d877002c35d", nil),
        (
            "lossless_indexed_1bit_palette.webp", 0, "f894ae5c5497aa16ce1749f56e186dda09919b902567013966c0227d37a142b8",
            nil
        ),
        ("lossy_alpha.webp", 6234, "41f51c4159d35851229a74e713acf9b22382dd102da79d7690d3d2c17ce05faa", nil),
        (
            "random_lossless.webp", 0, "b5897f55b8341ce6bb7d12be6e3d73f1342944516d57600fc206d6d3416b4961",
            "58a448e6751a7f7ceae0d6c815b9091dc81d671238fd4788d510b3eb04282afb"
        ),
        (
            "random_lossy.webp", 0, "02295b869ad13d1473d6821ed889aab13611eca78b66022cb78d3474c9e466d0",
            "7a0f6b426933e019643165adc6b2b5b418282d23638a63ff29f8a2fe663a7843"
        ),
        ("simple-gray.webp", 0, "e9b597be82b83bcf7269ae542d364c75aa138d07f13e1cf56b1becafffcb85d1", nil),
        ("test.webp", 0, "2bc155d2cc0f491c69d1dca0f42115836debe932132880586154ded43a4c1c46", nil),
        ("video-001.lossy.webp", 0, "d211a83b7104eb1231d2f37df495322caace92a55b4023e7ce0a1d9d87a86182", nil),
        ("yellow_rose.lossless.webp", 62689, "6dd5da608f9e693913bbf2e9e9f19bd5498b9ae8ca0ca58bf71be5c384199290", nil),
        (
            "yellow_rose.lossy-with-alpha.webp", 62689,
            "1b7efb3969dd96d89f4086338d919b447f6b3cb25f43c7300159455ab24fa51c", nil
        ),
        ("yellow_rose.lossy.webp", 0, "f1c89bd7fc73be5e71adbb779693e97adf0f58ff3d665b94cce37aaf19a06f10", nil),
    ]
}

extension Bitmap {
    /// The pixels with every fully transparent pixel set to 0, 0, 0, 0: its color cannot be seen, and decoders
    /// differ in what they leave there.
    var cleared: [UInt8] {
        var pixels = self.pixels
        for offset in stride(from: 0, to: pixels.count, by: 4) where pixels[offset + 3] == 0 {
            pixels.replaceSubrange(offset..<offset + 4, with: [0, 0, 0, 0])
        }
        return pixels
    }

    /// The hex SHA-256 of ``cleared``, to compare with ``PillowReference``.
    var clearedDigest: String { SHA256.digest(cleared).map { String(format: "%02x", $0) }.joined() }
}
