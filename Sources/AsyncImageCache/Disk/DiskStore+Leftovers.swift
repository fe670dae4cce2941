import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Temporary files: how a write names and locks its own, and which ones an interrupted write left behind,
/// by this process, another one, or one of another PID namespace.
extension DiskStore {
    /// A temporary file's name: the prefix, the writing process's id, its PID namespace where known
    /// (`n` and the number, see ``pidNamespace``), a UUID.
    static func temporaryName() -> String {
        "\(temporaryPrefix)\(getpid())-\(pidNamespace.map { "n\($0)-" } ?? "")\(UUID().uuidString)"
    }

    /// The PID namespace this process's ids belong to (the inode number of `/proc/self/ns/pid`); `nil`
    /// where the system does not say. A writer's id means something only in its own namespace.
    static let pidNamespace: UInt64? = {
        var info = stat()
        return stat("/proc/self/ns/pid", &info) == 0 ? UInt64(info.st_ino) : nil
    }()

    /// The PID namespace a temporary file's name gives after its process id (`rest` is what follows
    /// the id's dash); `nil` for names without one (older builds, or systems that do not say).
    private static func namespace(inNameAfterProcessID rest: Substring) -> UInt64? {
        guard rest.first == "n", let dash = rest.firstIndex(of: "-") else { return nil }
        return UInt64(rest[rest.index(after: rest.startIndex)..<dash])
    }

    /// How young a temporary file of a writer in another PID namespace is kept even when unlocked:
    /// between creating its file and locking it, a writer holds no lock yet, and nothing else tells
    /// whether that writer lives. A write locks its file within microseconds of making it.
    static let unlockedGracePeriod: TimeInterval = 60

    /// The temporary files this process is writing now, by name: a file named with this process's id
    /// and not listed is a leftover of an earlier process that had the same id.
    static let writesInProgress = LockedBox(Set<String>())

    /// How much older than the store's opening a temporary file named with this process's id must be to
    /// be taken, by the opening's sweep, for an earlier process's: file times come from the kernel's
    /// coarse clock, a few milliseconds behind `Date()`, so a write that began just after the opening
    /// can be dated just before it. An earlier process's leftover from within the margin (a container's
    /// main process restarted at once) stays until the next opening, or a day, when trims remove it: one
    /// file of at most one image, not counted in the budget meanwhile.
    static let openingClockMargin: TimeInterval = 1

    /// Past this age a temporary file is a leftover even when a process with its writer's id exists:
    /// a write takes moments, so the id has been given to another process since (or the write stalled
    /// for a day, and its rename then fails: the image is not kept, and is fetched next time).
    private static let temporaryMaxAge: TimeInterval = 24 * 60 * 60

    /// Whether a temporary file, last modified at `modified`, was left by an interrupted write. Names
    /// without a process id are leftovers; one of a write of this process's stores (another store on
    /// the same folder) never is. Another process's is when that process has ended, or when the file is
    /// older than ``temporaryMaxAge``.
    ///
    /// A file named with this process's id that no store of it writes, last modified before a store
    /// opened (`openedAt`, less ``openingClockMargin``), was left by an earlier process that had the id: a
    /// leftover, whatever its age; so is one the opening's sweep finds dated after its own time (`now`,
    /// plus the margin), as a clock set back since the earlier process leaves it. One modified since the
    /// opening (its sweep runs later, on the disk queue), or one a trim finds, is another live process's
    /// with the same id (containers sharing the folder each run their main process as pid 1), so it is
    /// kept until it is ``temporaryMaxAge`` old.
    ///
    /// A name that gives another PID namespace than this process's says nothing this process can check
    /// about its writer: it is a leftover once it is ``unlockedGracePeriod`` old (and then only when no
    /// write holds it locked), so a writer that has made its file and not yet locked it keeps it.
    private static func isLeftover(temporaryName name: String, modified: Date?, now: Date, openedAt: Date?) -> Bool {
        let rest = name.dropFirst(temporaryPrefix.count)
        guard let dash = rest.firstIndex(of: "-"), let pid = pid_t(rest[..<dash]), pid > 0 else { return true }
        if let namespace = Self.namespace(inNameAfterProcessID: rest[rest.index(after: dash)...]),
            namespace != pidNamespace
        {
            return modified.map { now.timeIntervalSince($0) > unlockedGracePeriod } ?? false
        }
        if pid == getpid() {
            if writesInProgress.withLock({ $0.contains(name) }) { return false }
            // Dated after the sweep's own time, it was not written since by anyone on this clock: it
            // predates a clock set back, and a trim would keep it until a day past that date.
            if let openedAt, let modified,
                modified < openedAt - openingClockMargin || modified > now + openingClockMargin
            {
                return true
            }
        } else if kill(pid, 0) != 0, errno == ESRCH {
            return true
        }
        return modified.map { now.timeIntervalSince($0) > temporaryMaxAge } ?? false
    }

    /// Removes the temporary files among `temporaries` that interrupted writes left (see
    /// ``isLeftover(temporaryName:modified:now:openedAt:)``), never one a write still holds locked.
    static func removeLeftovers(among temporaries: [Entry], now: Date, openedAt: Date? = nil) {
        for temporary in temporaries
        where isLeftover(temporaryName: temporary.name, modified: temporary.lastUsed, now: now, openedAt: openedAt) {
            switch lockState(atPath: temporary.path) {
            case .locked:
                continue
            case .unknown:
                // Not ours to open (another user's write, made under a strict umask): a live writer
                // may hold it, so it goes only once it is too old to be one.
                guard now.timeIntervalSince(temporary.lastUsed) > temporaryMaxAge else { continue }
            case .unlocked:
                break
            }
            _ = temporary.remove()
        }
    }

    private enum LockState {
        case locked, unlocked, unknown
    }

    /// Whether a write holds the temporary file at `path` locked (see ``writeLocked(_:to:)``): a
    /// process id says nothing about a writer in another PID namespace (a container sharing the
    /// folder, whose ids this process cannot see), while its lock holds on the file itself. `unlocked`
    /// where the file is gone or is a link, or the file system has no locks; `unknown` where this
    /// process may not open it (another user's file, `EACCES`), so its lock cannot be asked.
    private static func lockState(atPath path: String) -> LockState {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return errno == EACCES || errno == EPERM ? .unknown : .unlocked }
        defer { close(descriptor) }
        return flock(descriptor, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK ? .locked : .unlocked
    }

    /// The modification date of what is at `path` (a link is not followed); `nil` when nothing is.
    static func modificationDate(atPath path: String) -> Date? {
        var info = stat()
        return lstat(path, &info) == 0 ? modificationDate(of: info) : nil
    }

    static func modificationDate(of info: stat) -> Date {
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        return Date(timeIntervalSince1970: Double(modified.tv_sec) + Double(modified.tv_nsec) / 1e9)
    }
}
