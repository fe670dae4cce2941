import Foundation

/// Original bytes with what their header says, as kept in the memory tier of originals.
struct OriginalImage: Sendable {
    let data: Data
    let header: ImageHeader
    /// For `file:` URLs, the file's modification date and size when it was read: a load whose
    /// stat differs reads the file again.
    let fileStamp: FileStamp?

    /// The size as displayed.
    var pixelSize: PixelSize { header.displaySize }
}

/// Identifies one version of a local file without reading it.
struct FileStamp: Hashable, Sendable {
    let modificationDate: Date
    let byteCount: Int

    init?(path: String) {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let date = attributes[.modificationDate] as? Date, let size = attributes[.size] as? NSNumber
        else { return nil }
        modificationDate = date
        byteCount = size.intValue
    }
}

/// An original on its way through one load, with where it came from.
final class FetchedOriginal: Sendable {
    enum Origin: Sendable {
        case memory, disk, source
    }

    let original: OriginalImage
    let origin: Origin
    private let isStored = LockedBox(false)

    init(_ original: OriginalImage, origin: Origin) {
        self.original = original
        self.origin = origin
    }

    /// True exactly once: for the first successful decode, which then stores the original.
    func claimStoring() -> Bool {
        isStored.withLock { stored in
            defer { stored = true }
            return !stored
        }
    }
}

/// A ready-to-draw image with its memory cost.
struct PreparedImage: Sendable {
    let image: SendableImage
    /// `width * height * 4`.
    let cost: Int

    init(_ bitmap: Bitmap) {
        image = SendableImage(PlatformImage.make(from: bitmap))
        cost = bitmap.byteCount
    }
}

#if canImport(UIKit) || canImport(AppKit)
/// Carries a `UIImage`/`NSImage` across concurrency domains: the store never mutates an image
/// after making it, and both classes are safe to read from any thread.
struct SendableImage: @unchecked Sendable {
    let value: PlatformImage
    init(_ value: PlatformImage) { self.value = value }
}
#else
/// Carries the image across concurrency domains (on Linux it is already `Sendable`).
struct SendableImage: Sendable {
    let value: PlatformImage
    init(_ value: PlatformImage) { self.value = value }
}

extension Bitmap {
    /// The platform image for `bitmap`: on Linux, the bitmap itself.
    static func make(from bitmap: Bitmap) -> Bitmap { bitmap }
}
#endif
