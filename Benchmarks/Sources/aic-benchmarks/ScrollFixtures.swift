import AsyncImageCache
import Foundation

/// The list the scroll benchmark flings through: 300 rows of local JPEGs, one image per row, laid
/// out as a phone would draw them (points at scale 3), after seed 003's test screen.
struct ScrollLayout {
    enum Kind: String {
        /// 2400x1600 photos in a 318x212 pt frame: 954x636 px on screen.
        case photo
        /// 460 px avatars shared between rows, in a 40x40 pt frame.
        case avatar
        /// 120x80 images at 120x80 pt, smaller than the screen's pixels.
        case small
    }

    struct Row {
        var kind: Kind
        var file: URL
        /// The image's frame in points.
        var frame: CGSize
        /// The row's height in points: the frame plus padding.
        var height: CGFloat
    }

    static let rowCount = 300
    static let distinctPhotos = 60
    static let distinctAvatars = 20
    static let distinctSmall = 50
    static let scale: CGFloat = 3
    static let screenHeight: CGFloat = 852

    let rows: [Row]
    /// The top of each row in points, and the list's total height.
    let tops: [CGFloat]
    let contentHeight: CGFloat

    init(folder: URL) {
        rows = (0..<Self.rowCount).map { index in
            switch index % 3 {
            case 0:
                let file = folder.appendingPathComponent("photo-\(index / 3 % Self.distinctPhotos).jpg")
                return Row(kind: .photo, file: file, frame: CGSize(width: 318, height: 212), height: 228)
            case 1:
                let file = folder.appendingPathComponent("avatar-\(index / 3 % Self.distinctAvatars).jpg")
                return Row(kind: .avatar, file: file, frame: CGSize(width: 40, height: 40), height: 56)
            default:
                let file = folder.appendingPathComponent("small-\(index / 3 % Self.distinctSmall).jpg")
                return Row(kind: .small, file: file, frame: CGSize(width: 120, height: 80), height: 96)
            }
        }
        var top: CGFloat = 0
        tops = rows.map { row in
            defer { top += row.height }
            return top
        }
        contentHeight = top
    }

    /// The rows that intersect the screen when the list is scrolled to `offset`.
    func visibleRows(at offset: CGFloat) -> Range<Int> {
        let bottom = offset + Self.screenHeight
        let first = tops.lastIndex { $0 <= offset } ?? 0
        let end = tops.firstIndex { $0 >= bottom } ?? rows.count
        return first..<max(first, end)
    }

    /// Writes the JPEGs into `folder` unless a previous run left them there complete.
    static func prepareFiles(in folder: URL) throws {
        let marker = folder.appendingPathComponent("complete")
        if FileManager.default.fileExists(atPath: marker.path) { return }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let encoder = ImageEncoders.JPEG(quality: 85)
        let sets: [(String, Int, PixelSize)] = [
            ("photo", distinctPhotos, PixelSize(width: 2400, height: 1600)),
            ("avatar", distinctAvatars, PixelSize(width: 460, height: 460)),
            ("small", distinctSmall, PixelSize(width: 120, height: 80)),
        ]
        for (prefix, count, size) in sets {
            for index in 0..<count {
                let bitmap = photoLike(size, seed: UInt64(index + 1) &* 0x9E37_79B9 ^ UInt64(prefix.count))
                try encoder.encode(bitmap).write(to: folder.appendingPathComponent("\(prefix)-\(index).jpg"))
            }
        }
        try Data().write(to: marker)
    }

    /// Content that compresses like a photo: soft light across the frame, a few blurred shapes and
    /// fine grain, so the JPEGs carry detail at every scale (a flat gradient would decode unrealistically fast).
    static func photoLike(_ size: PixelSize, seed: UInt64) -> Bitmap {
        var random = SplitMix(state: seed)
        let blobs = (0..<8).map { _ in
            (
                x: random.unit() * Double(size.width), y: random.unit() * Double(size.height),
                radius: (0.08 + random.unit() * 0.3) * Double(size.width),
                color: (random.unit() * 255, random.unit() * 255, random.unit() * 255)
            )
        }
        let base = (random.unit() * 160, random.unit() * 160, random.unit() * 160)
        var pixels = [UInt8](repeating: 255, count: size.width * size.height * 4)
        for y in 0..<size.height {
            for x in 0..<size.width {
                var (red, green, blue) = (base.0 + Double(y) * 60 / Double(size.height), base.1, base.2)
                for blob in blobs {
                    let (dx, dy) = (Double(x) - blob.x, Double(y) - blob.y)
                    let weight = max(0, 1 - (dx * dx + dy * dy) / (blob.radius * blob.radius))
                    red += (blob.color.0 - red) * weight * 0.7
                    green += (blob.color.1 - green) * weight * 0.7
                    blue += (blob.color.2 - blue) * weight * 0.7
                }
                let texture = 18 * sin(Double(x) * 0.21 + Double(y) * 0.13) * cos(Double(y) * 0.17)
                let grain = Double(random.next() & 31) - 16
                let offset = (y * size.width + x) * 4
                pixels[offset] = UInt8(clamping: Int(red + texture + grain))
                pixels[offset + 1] = UInt8(clamping: Int(green + texture + grain))
                pixels[offset + 2] = UInt8(clamping: Int(blue - texture + grain))
            }
        }
        return Bitmap(width: size.width, height: size.height, pixels: pixels)
    }
}

/// A small deterministic generator, so every run draws the same files and flings.
struct SplitMix {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A value in 0..<1.
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
