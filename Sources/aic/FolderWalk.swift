import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The images in a folder given to `aic sheet`, found with `opendir` and `readdir` on the bytes of
/// its path.
///
/// On Linux a file name is bytes, and some are not UTF-8 (`caf\xE9.jpg`, in Latin-1). Foundation's
/// enumerator hands such a name over repaired (`caf\u{FFFD}.jpg`), the URL of a file that is not
/// there, and cannot start from a folder so named (its URL's `path` is `""`). The rules are the ones
/// aic kept with Foundation's enumerator:
/// - a hidden file or folder (its name starts with `.`) is passed over: other programs' caches and
///   metadata (`.thumbnails`, `._photo.jpg`);
/// - the folder itself is walked where it points when it is a symbolic link (`~/Pictures` on another
///   disk); inside it, no link to a folder is followed (so no loop can trap the walk), but a link to an
///   image file is an image, as it is when named on the command line;
/// - a folder on another file system is not walked into (Foundation's enumerator on Linux, `fts` with
///   `FTS_XDEV`, did not), nor one already walked: a folder bind-mounted inside itself (on the same file
///   system) would otherwise show its images again under the mount, where `fts` reports the cycle;
/// - a folder that cannot be read is passed over;
/// - a file is an image by its extension, in any case (``Inputs/imageExtensions``);
/// - the paths come back sorted by their bytes, so a sheet comes out the same on every run.
enum FolderWalk {
    /// The paths of the images in the folder at `path` and in its folders, sorted by their bytes; `nil`
    /// when `path` names no folder (nor a link to one).
    static func imagePaths(inFolderAt path: [UInt8]) -> [[UInt8]]? {
        var status = stat()
        guard stat(Inputs.cString(path), &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return nil }
        let root = realpath(Inputs.cString(path), nil)
        defer { free(root) }
        var pending = [root.map { Array(UnsafeRawBufferPointer(start: $0, count: strlen($0))) } ?? path]
        var found: [[UInt8]] = []
        var walked: Set<[UInt64]> = [[UInt64(status.st_dev), UInt64(status.st_ino)]]
        while let folder = pending.popLast() {
            let prefix = folder.last == slash ? folder : folder + [slash]
            for name in names(inFolderAt: folder) where name.first != UInt8(ascii: ".") {
                let entry = prefix + name
                var entryStatus = stat()
                guard lstat(Inputs.cString(entry), &entryStatus) == 0 else { continue }
                switch entryStatus.st_mode & S_IFMT {
                case S_IFDIR where entryStatus.st_dev == status.st_dev:
                    if walked.insert([UInt64(entryStatus.st_dev), UInt64(entryStatus.st_ino)]).inserted {
                        pending.append(entry)
                    }
                case S_IFREG where isImageName(name): found.append(entry)
                case S_IFLNK where isImageName(name) && isRegularFile(entry): found.append(entry)
                default: break
                }
            }
        }
        return found.sorted { $0.lexicographicallyPrecedes($1) }
    }

    private static let slash = UInt8(ascii: "/")

    /// The names in the folder at `path`, `.` and `..` among them; none when it cannot be read. Read to
    /// the end before the walk goes on, so that only one folder is open at a time however deep it goes.
    private static func names(inFolderAt path: [UInt8]) -> [[UInt8]] {
        guard let stream = opendir(Inputs.cString(path)) else { return [] }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            names.append(withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) })
        }
        return names
    }

    /// Whether `name` ends in one of ``Inputs/imageExtensions``, in any case, after a `.` that does not
    /// start it: the test `URL.pathExtension` made.
    private static func isImageName(_ name: [UInt8]) -> Bool {
        guard let dot = name.lastIndex(of: UInt8(ascii: ".")), dot > name.startIndex else { return false }
        return Inputs.imageExtensions.contains(String(decoding: name[(dot + 1)...], as: UTF8.self).lowercased())
    }

    /// Whether the path leads to a regular file, through any links.
    private static func isRegularFile(_ path: [UInt8]) -> Bool {
        var status = stat()
        return stat(Inputs.cString(path), &status) == 0 && status.st_mode & S_IFMT == S_IFREG
    }
}
