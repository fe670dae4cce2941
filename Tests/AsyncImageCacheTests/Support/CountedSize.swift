import Foundation

@testable import AsyncImageCache

/// What files count against a disk tier's budget: the space each takes on disk
/// (``DiskStore/countedSize(of:)``), not its size. That depends on the file system the tests write to
/// (ext4 and tmpfs count whole 4 KiB blocks, ext4 a block more for attributes its inode has no room
/// for; others keep small files inline or allocate otherwise), so tests measure it at run time instead
/// of assuming one.
enum CountedSize {
    /// What the regular file at `path` counts (a link is not followed); `nil` when there is none. Worked
    /// out here from `lstat` as the budget means it (blocks of 512 bytes, never less than the size), not
    /// through ``DiskStore/countedSize(of:)``: the tests that use it check that function too.
    static func ofFile(atPath path: String) -> Int? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return max(Int(info.st_size), Int(info.st_blocks) * 512)
    }

    /// What `data` counts once a disk tier stores it with a pixel size (and `metadata`, when given): stored
    /// in a scratch folder beside the tests' temporary folders, on the same file system.
    static func ofStored(_ data: Data, metadata: HTTPCacheMetadata? = nil) throws -> Int {
        let scratch = TemporaryDirectory("counted-size")
        let disk = DiskStore(directory: scratch.url, byteLimit: 1 << 40)
        let url = URL(string: "https://images.example.com/measured.jpg")!
        try disk.store(data, pixelSize: PixelSize(width: 1, height: 1), metadata: metadata, for: url)
        disk.waitForPendingTrims()
        guard let counted = ofFile(atPath: disk.filePath(for: url)) else { throw POSIXError(.ENOENT) }
        return counted
    }

    /// What `byteCount` bytes count once a disk tier stores them with a pixel size.
    static func ofStored(byteCount: Int) throws -> Int {
        try ofStored(Data(repeating: 1, count: byteCount))
    }

    /// What `byteCount` bytes count written as another program writes a file into the folder: no attributes.
    static func ofWritten(byteCount: Int) throws -> Int {
        let scratch = TemporaryDirectory("counted-size")
        let file = scratch.url.appendingPathComponent("written")
        try Data(repeating: 1, count: byteCount).write(to: file)
        guard let counted = ofFile(atPath: file.path) else { throw POSIXError(.ENOENT) }
        return counted
    }
}
