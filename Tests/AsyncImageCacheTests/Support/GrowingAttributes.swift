import Foundation

@testable import AsyncImageCache

/// The real attributes, except that writing the HTTP caching facts onto a file also makes it take one
/// block more on disk, its bytes and size unchanged (`fallocate` with `FALLOC_FL_KEEP_SIZE`). ext4 does
/// as much itself when the facts do not fit in the inode; btrfs keeps attributes apart from a file's
/// blocks, so there only this shows what the disk tier does when an attribute grows a file.
struct GrowingAttributes: FileAttributesHook {
    /// Linux's `FALLOC_FL_KEEP_SIZE`: space beyond the end of the file, which `st_size` does not show.
    static let keepSize: Int32 = 1

    /// glibc's `fallocate`, which its Swift module leaves out (it is declared for `_GNU_SOURCE` only).
    static let fallocate: @convention(c) (Int32, Int32, off_t, off_t) -> Int32 = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate") else {
            fatalError("no fallocate in this C library")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32, off_t, off_t) -> Int32).self)
    }()

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
        guard name == HTTPCacheMetadata.attributeName else { return }
        let descriptor = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var info = stat()
        // The block past what the file takes now; its modification date (the disk tier's last use) kept, as
        // an attribute write keeps it, where `fallocate` moves it.
        guard fstat(descriptor, &info) == 0,
            Self.fallocate(descriptor, Self.keepSize, max(off_t(info.st_blocks) * 512, off_t(info.st_size)), 4096) == 0,
            futimens(descriptor, [info.st_atim, info.st_mtim]) == 0
        else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}

extension HTTPCacheMetadata {
    /// Caching facts long enough that they never fit in an ext4 inode: written onto a stored file (as a
    /// `304` does), they make it take a block more there, and with ``GrowingAttributes`` anywhere.
    static var longForTests: HTTPCacheMetadata {
        let tag = "\"" + String(repeating: "e", count: 300) + "\""
        return HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 3600, entityTag: tag, lastModified: "x"))
    }
}
