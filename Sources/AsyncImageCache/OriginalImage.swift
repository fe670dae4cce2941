import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Original bytes with what their header says, as kept in the memory tier of originals.
struct OriginalImage: Sendable {
    let data: Data
    let header: ImageHeader
    /// For `file:` URLs, the file's dates, size and identity when it was read: a load whose
    /// stat differs reads the file again.
    let fileStamp: FileStamp?
    /// How often hits on these bytes in memory mark their disk file used.
    let diskUse = DiskUseThrottle()

    /// The size as displayed.
    var pixelSize: PixelSize { header.displaySize }
}

/// Identifies one version of a local file without reading it: its modification time and size, and which
/// file it is (device and inode number). The identity tells apart a file put in place by a rename, or reached
/// through a symbolic link pointed elsewhere, that kept the old one's date and size (`cp -p`, `rsync`, `tar`
/// and `curl -R` all set the date they copied). The status change time, which nobody can set, tells apart
/// a file written in place and given back its old date (`cp -p` over an existing file).
///
/// A path that is a symbolic link adds the link's own inode and status change time: a link pointed elsewhere
/// and back is a new link, so bytes read while it pointed elsewhere are not taken for the version before
/// (the stat before the read and the one after it would both find the same file). A link in a folder of the
/// path is not looked at.
struct FileStamp: Hashable, Sendable {
    let modificationTime: timespec
    let changeTime: timespec
    let byteCount: Int
    let device: UInt64
    let inode: UInt64
    /// For a path that is a symbolic link, the link's inode; `0` otherwise.
    let linkInode: UInt64
    /// For a path that is a symbolic link, the link's status change time; zero otherwise.
    let linkChangeTime: timespec

    init(
        modificationTime: timespec, changeTime: timespec, byteCount: Int, device: UInt64, inode: UInt64,
        linkInode: UInt64 = 0, linkChangeTime: timespec = timespec()
    ) {
        self.modificationTime = modificationTime
        self.changeTime = changeTime
        self.byteCount = byteCount
        self.device = device
        self.inode = inode
        self.linkInode = linkInode
        self.linkChangeTime = linkChangeTime
    }

    /// A stamp that no file has and no other call returns: the version a load that found no file runs
    /// under, so that it shares no run, fetch or bytes with another load (see ``ImageStore/prepared(_:priority:isSecondLook:)``).
    static func unshared() -> FileStamp {
        let number = unsharedCount.withLock {
            $0 += 1
            return $0
        }
        return FileStamp(
            modificationTime: timespec(), changeTime: timespec(), byteCount: -1, device: .max, inode: number)
    }

    private static let unsharedCount = LockedBox<UInt64>(0)

    static func == (lhs: FileStamp, rhs: FileStamp) -> Bool {
        lhs.byteCount == rhs.byteCount && lhs.modificationTime.tv_sec == rhs.modificationTime.tv_sec
            && lhs.modificationTime.tv_nsec == rhs.modificationTime.tv_nsec
            && lhs.changeTime.tv_sec == rhs.changeTime.tv_sec && lhs.changeTime.tv_nsec == rhs.changeTime.tv_nsec
            && lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.linkInode == rhs.linkInode
            && lhs.linkChangeTime.tv_sec == rhs.linkChangeTime.tv_sec
            && lhs.linkChangeTime.tv_nsec == rhs.linkChangeTime.tv_nsec
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(byteCount)
        hasher.combine(modificationTime.tv_sec)
        hasher.combine(modificationTime.tv_nsec)
        hasher.combine(changeTime.tv_sec)
        hasher.combine(changeTime.tv_nsec)
        hasher.combine(device)
        hasher.combine(inode)
        hasher.combine(linkInode)
        hasher.combine(linkChangeTime.tv_sec)
        hasher.combine(linkChangeTime.tv_nsec)
    }
}

/// How the store looks at local files before reading them: one `lstat` for their version (and a `stat` of
/// the target of a symbolic link). Tests replace it with a spy that counts calls.
protocol FileInspecting: Sendable {
    /// The version of the file at `path`, or `nil` when there is no regular file there.
    func stamp(ofFileAt path: FileSystemPath) -> FileStamp?
}

/// The real file system.
struct SystemFileInspector: FileInspecting {
    func stamp(ofFileAt path: FileSystemPath) -> FileStamp? {
        var info = stat()
        guard path.withCString({ lstat($0, &info) }) == 0 else { return nil }
        var link: (inode: UInt64, changeTime: timespec) = (0, timespec())
        if info.st_mode & S_IFMT == S_IFLNK {
            link = (UInt64(truncatingIfNeeded: info.st_ino), FileStamp.changeTime(of: info))
            guard path.withCString({ stat($0, &info) }) == 0 else { return nil }
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return nil }
        return FileStamp(status: info, linkInode: link.inode, linkChangeTime: link.changeTime)
    }
}

extension FileStamp {
    /// The stamp of the regular file whose status is `info`, reached through the symbolic link with inode
    /// `linkInode` and status change time `linkChangeTime`, or directly (`0` and zero): what
    /// ``SystemFileInspector`` answers for its path, and, for a file opened without following a link, what
    /// `fstat` of the open descriptor gives.
    init(status info: stat, linkInode: UInt64 = 0, linkChangeTime: timespec = timespec()) {
        self.init(
            modificationTime: Self.modificationTime(of: info), changeTime: Self.changeTime(of: info),
            byteCount: Int(info.st_size), device: UInt64(truncatingIfNeeded: info.st_dev),
            inode: UInt64(truncatingIfNeeded: info.st_ino), linkInode: linkInode, linkChangeTime: linkChangeTime)
    }

    fileprivate static func modificationTime(of info: stat) -> timespec {
        #if canImport(Darwin)
        info.st_mtimespec
        #else
        info.st_mtim
        #endif
    }

    fileprivate static func changeTime(of info: stat) -> timespec {
        #if canImport(Darwin)
        info.st_ctimespec
        #else
        info.st_ctim
        #endif
    }
}

/// An original on its way through one load, with where it came from.
final class FetchedOriginal: Sendable {
    enum Origin: Sendable {
        case memory, disk, source
    }

    let original: OriginalImage
    let origin: Origin
    /// For bytes fresh from an HTTP source, what their response said about caching them.
    let policy: HTTPCachePolicy?
    /// When the bytes arrived: their freshness (`policy.maxAge`) runs from here, however late they decode.
    let receivedAt: Date
    /// The disk tier's ``DiskStore/generation`` before the bytes were looked up: after a
    /// `removeAll()` since, they are handed out but not kept.
    let generation: Int
    /// The URL's ``ImageStore/replacements`` count before the bytes were looked up: after a revalidation
    /// has replaced the image since, they are old and handed out but not kept.
    let replacement: Int
    /// For remote bytes found in memory or on disk, their caching facts as the lookup found them, put
    /// back with the bytes when they are kept (see ``ImageStore/keepCacheMetadata(of:for:)``).
    let cacheMetadata: HTTPCacheMetadata?
    private let isStored = LockedBox(false)
    private let digest: LockedBox<Int?>

    /// `bytesDigest`, when given, is ``bytesDigest`` already made (by the lookup that found the bytes).
    init(
        _ original: OriginalImage, origin: Origin, policy: HTTPCachePolicy? = nil, generation: Int, replacement: Int,
        receivedAt: Date = Date(), cacheMetadata: HTTPCacheMetadata? = nil, bytesDigest: Int? = nil
    ) {
        self.original = original
        self.origin = origin
        self.policy = policy
        self.receivedAt = receivedAt
        self.generation = generation
        self.replacement = replacement
        self.cacheMetadata = cacheMetadata
        digest = LockedBox(bytesDigest)
    }

    /// A hash of the bytes, made once (by the first decode of them that asks), that tells the images of one
    /// response of a remote URL from those of another: see ``PreparedImage/sourceDigest``.
    var bytesDigest: Int {
        digest.withLock { digest in
            if let digest { return digest }
            let made = PreparedImage.digest(of: original.data)
            digest = made
            return made
        }
    }

    /// True exactly once: for the first successful decode, which then stores the original.
    func claimStoring() -> Bool {
        isStored.withLock { stored in
            defer { stored = true }
            return !stored
        }
    }
}

/// A ready-to-draw image with what it was made for.
struct PreparedImage: Sendable {
    let image: SendableImage
    /// `width * height * 4`.
    let cost: Int
    let pixelSize: PixelSize
    /// The request it was prepared for.
    let request: ImageRequest
    /// Whether the image has the source's natural (displayed) size: no width was asked for, or one
    /// at least as wide as the source, which is never scaled up.
    let isNaturalSize: Bool
    /// The radius of its rounded corners in its own pixels: the request's, or less in proportion
    /// when the source was narrower than the request's width (see ``ImageRequest/cornerPixelRadius``).
    let cornerPixelRadius: Int
    /// The source's size as displayed, whose aspect gives the height of the image of any width made
    /// from it.
    let naturalSize: PixelSize
    /// For `file:` URLs, the version of the file it was decoded from.
    let fileStamp: FileStamp?
    /// For remote URLs, a hash of the bytes it was decoded from (``FetchedOriginal/bytesDigest``): the memory
    /// tier keeps the images of one response of a URL, never of two side by side, as a revalidation checks
    /// one response for the URL and its `304` would otherwise keep an older picture shown beside a newer one.
    let sourceDigest: Int?
    /// How often hits on this image in memory mark its URL's disk file used.
    let diskUse = DiskUseThrottle()

    init(
        _ bitmap: Bitmap, request: ImageRequest, naturalSize: PixelSize, fileStamp: FileStamp?, sourceDigest: Int? = nil
    ) {
        image = SendableImage(PlatformImage.make(from: bitmap))
        cost = bitmap.byteCount
        pixelSize = bitmap.pixelSize
        self.request = request
        self.naturalSize = naturalSize
        isNaturalSize = request.targetPixelWidth.map { $0 >= naturalSize.width } ?? true
        cornerPixelRadius = request.cornerPixelRadius(atNaturalWidth: naturalSize.width)
        self.fileStamp = fileStamp
        self.sourceDigest = sourceDigest
    }

    /// The hash of `bytes` that ``sourceDigest`` holds.
    static func digest(of bytes: Data) -> Int {
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
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
