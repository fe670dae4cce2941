import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `removeAll()` that cannot list the folder (the process has no descriptor free, say) moves it aside
/// instead: a rename needs no descriptor, and every file goes out of the store's reach at once.
extension DiskStore {
    /// What the name of a folder moved aside starts with. A store's name has no `~` in it, so no store's
    /// folder is ever taken for one moved aside.
    static let asideMarker = "~removed-"

    /// The start of the names of the folders moved aside from the folder named `name`: the marker and 16
    /// hex digits of the name's SHA-256, short whatever the name's length (a store's may take 255 bytes,
    /// a file name's most, and the rename would fail).
    static func asidePrefix(forFolderNamed name: String) -> String {
        asideMarker + SHA256.hexDigest(of: name).prefix(16) + "-"
    }

    /// Moves the folder aside, makes an empty one with the same permissions in its place, and removes
    /// the one moved aside in the background, with its files, once it can be listed. Returns whether the
    /// folder was moved; when the rename fails too, the files stay where they are.
    @discardableResult
    func moveAside() -> Bool {
        let path = folder.path
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return false }
        let url = URL(fileURLWithPath: path)
        let aside =
            url.deletingLastPathComponent().appendingPathComponent(
                Self.asidePrefix(forFolderNamed: url.lastPathComponent)
                    + "\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
            ).path
        guard rename(path, aside) == 0 else { return false }
        // Made at once, not at the next write: a symbolic link to the folder keeps naming one.
        _ = mkdir(path, info.st_mode & 0o7777)
        #if canImport(CXattr)
        folderDescriptor?.forget()
        #endif
        Self.removeAside(atPath: aside, attempt: 0)
        return true
    }

    /// Removes the folder moved aside at `path` with everything in it, later: tried again, each wait
    /// twice the last up to a minute, until it is gone (the descriptors may stay used up for long; the next
    /// opening of a store on the folder removes it too).
    private static func removeAside(atPath path: String, attempt: Int) {
        let wait = min(60, 0.25 * Double(1 << min(attempt, 8)))
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + wait) {
            try? FileManager.default.removeItem(atPath: path)
            var info = stat()
            guard lstat(path, &info) == 0 else { return }
            removeAside(atPath: path, attempt: attempt + 1)
        }
    }

    /// Removes the folders moved aside from the folder at `path` (resolved, without a final slash) that
    /// are still there: their process ended, or could not remove them.
    static func removeFoldersMovedAside(from path: String) {
        let url = URL(fileURLWithPath: path)
        let parent = url.deletingLastPathComponent().path
        let base = parent.hasSuffix("/") ? parent : parent + "/"
        let prefix = Array(asidePrefix(forFolderNamed: url.lastPathComponent).utf8CString.dropLast())
        // Only folders: a file or a link of such a name is not one this code made.
        let folders = items(ofType: S_IFDIR, inFolderAtPath: base) { strncmp($0, prefix, prefix.count) == 0 } ?? []
        for (name, _) in folders { try? FileManager.default.removeItem(atPath: base + name) }
    }
}
