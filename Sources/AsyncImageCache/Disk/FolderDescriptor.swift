#if canImport(CXattr)
import CXattr
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The disk tier's folder held open, so that a size lookup names its file relative to it
/// (`getxattrat`, Linux 6.13) and the kernel resolves one path component instead of every component
/// of the folder's path: a bare lookup in a folder five deep took 1.1 us instead of 1.4 here, and the
/// size benchmark's path (a folder three deep) 2.03-2.07 us instead of 2.11-2.21.
///
/// The descriptor follows the folder it opened, wherever that goes, where a path names whatever is
/// there now. So the path is looked at again, at most once every ``recheckInterval`` (a `stat` and a
/// compare), and a folder that was removed or replaced there is given up for the new one: for that
/// long at most, a lookup may answer from a folder moved away with its files, or miss a file of a new
/// folder made at the path by another process (the size then comes from the file's header). The
/// folder's own writes and trims change files, never the folder.
///
/// On a kernel without `getxattrat`, or one that forbids it (a container's seccomp filter), the first
/// lookup finds out and every lookup after it reads by path.
final class FolderDescriptor: Sendable {
    /// How a lookup through the folder went.
    enum Read: Equatable {
        /// The attribute's length in the buffer.
        case read(length: Int)
        /// The file has no such attribute, or there is no such file.
        case absent
        /// The folder cannot answer (not open, no `getxattrat`, another error): read by path.
        case unavailable
    }

    /// The longest a lookup trusts the open folder to be the one at the path, in nanoseconds.
    let recheckInterval: UInt64
    /// `getxattrat` itself, or a stand-in that fails as an old kernel does (for tests): returns the
    /// length or -1, and the error.
    typealias GetAttribute =
        @Sendable (
            _ directory: Int32, _ file: UnsafePointer<CChar>, _ name: UnsafePointer<CChar>,
            _ buffer: UnsafeMutableRawBufferPointer
        ) -> (length: Int, error: Int32)
    private let getAttribute: GetAttribute

    /// An open descriptor, closed once the last lookup using it lets it go: a lookup that took it before
    /// it was replaced still reads through a descriptor of its own, never one reused for another file.
    private final class Opened: Sendable {
        let descriptor: Int32
        let device: UInt64
        let inode: UInt64

        init?(path: UnsafePointer<CChar>) {
            let descriptor = cxattr_open_directory(path)
            guard descriptor >= 0 else { return nil }
            var status = stat()
            guard fstat(descriptor, &status) == 0 else {
                close(descriptor)
                return nil
            }
            self.descriptor = descriptor
            (device, inode) = (UInt64(status.st_dev), UInt64(status.st_ino))
        }

        deinit { close(descriptor) }

        func isFolder(atPath path: UnsafePointer<CChar>) -> Bool {
            var status = stat()
            return stat(path, &status) == 0 && UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
        }
    }

    private struct State {
        var opened: Opened?
        /// When the path was last looked at (``now()``); `nil` before the first lookup.
        var checkedAt: UInt64?
        /// Whether `getxattrat` failed as on a kernel without it.
        var isUnsupported = false
    }

    private let state = LockedBox(State())
    /// The folder's path, as the store names its files.
    private let path: String

    /// - Parameters:
    ///   - path: The folder's path.
    ///   - recheckInterval: The longest the open folder is trusted without looking at the path again.
    ///   - getAttribute: `getxattrat`, unless a test counts or fails it.
    init(
        path: String, recheckInterval: TimeInterval = 1,
        getAttribute: @escaping GetAttribute = FolderDescriptor.getxattrat
    ) {
        self.path = path
        self.recheckInterval = UInt64(max(0, recheckInterval) * 1e9)
        self.getAttribute = getAttribute
    }

    /// The system call.
    static let getxattrat: GetAttribute = { directory, file, name, buffer in
        let length = cxattr_lgetxattrat(directory, file, name, buffer.baseAddress, buffer.count)
        return (length, length < 0 ? errno : 0)
    }

    /// Reads the attribute `name` of the file named `file` in the folder into `buffer`.
    func readAttribute(
        named name: UnsafePointer<CChar>, ofFile file: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer
    ) -> Read {
        guard let opened = currentFolder() else { return .unavailable }
        let (length, error) = getAttribute(opened.descriptor, file, name, buffer)
        if length >= 0 { return .read(length: length) }
        switch error {
        case ENODATA, ENOENT:
            return .absent
        case ENOSYS, EPERM, EINVAL, EBADF:
            // No such call here (EPERM: a seccomp filter that does not know it; EINVAL: a kernel that knows
            // the number but not these arguments): by path from now on.
            state.withLock { state in
                state.isUnsupported = true
                state.opened = nil  // its descriptor closes once this lookup lets it go
            }
            return .unavailable
        default:
            return .unavailable  // the path read decides, as it did before this way existed
        }
    }

    /// The open folder, opened or replaced first when the path was not looked at for
    /// ``recheckInterval``; `nil` when there is no folder there or no `getxattrat`.
    private func currentFolder() -> Opened? {
        let now = Self.now()
        return state.withLock { state -> Opened? in
            guard !state.isUnsupported else { return nil }
            if let checkedAt = state.checkedAt, now &- checkedAt < recheckInterval { return state.opened }
            state.checkedAt = now
            return path.withCString { path in
                if let opened = state.opened, opened.isFolder(atPath: path) { return opened }
                // Not open yet, or the folder there is another (removed, replaced) or none: the old descriptor
                // closes as the lookups holding it finish.
                state.opened = Opened(path: path)
                return state.opened
            }
        }
    }

    /// Nanoseconds of the monotonic clock at the resolution of the scheduler's tick, which takes half the
    /// time of reading it exactly (12 against 22 ns here) and is exact enough for ``recheckInterval``.
    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Lets the open folder go (it was moved away): the next lookup opens the folder at the path.
    func forget() {
        state.withLock { state in
            state.opened = nil
            state.checkedAt = nil
        }
    }

    /// The descriptor held now, if any (for tests).
    var heldDescriptor: Int32? { state.withLock { $0.opened?.descriptor } }

    /// Whether lookups read by path because the kernel has no `getxattrat` (for tests).
    var isUnsupported: Bool { state.withLock { $0.isUnsupported } }
}
#endif
