import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The disk tier: original bytes of remote images, one file per URL, named by the hex SHA-256 of
/// the URL string, with the displayed pixel size in an extended attribute.
///
/// Writes are atomic: bytes and attribute go to a temporary file that is then renamed into place,
/// so neither a crash nor a second process ever sees half a file. The temporary file is held locked
/// (`flock`) while it is written, so that a store sharing the folder, even from another container
/// whose process ids it cannot see, never takes it for an interrupted write's leftover; its name gives
/// the writer's PID namespace, so that a file made and not yet locked is kept too. A read marks the file used by
/// setting its modification time, as does a memory hit on its image (``markUsed(_:)``). Before a
/// write's rename, the least recently used files are removed to keep the directory within
/// `byteLimit`; a trim on a background queue then re-reads the directory, which another process may
/// share. Loads write on a background queue (``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``):
/// their delivery never waits for a commit. Until a queued write is in place, reads that miss its file
/// find its bytes, size and caching facts instead (``StagedWrites``), so that neither this store nor
/// another of this process on the folder downloads the image again meanwhile.
final class DiskStore: Sendable {
    let directory: URL
    /// `directory.path` with a trailing slash, kept as a string: building paths through `URL` costs
    /// more than the `getxattr` it leads to.
    private let directoryPath: String
    private let directoryPathBytes: [UInt8]
    let byteLimit: Int
    let attributes: any ExtendedAttributeStoring

    private static let temporaryPrefix = ".tmp-"
    /// Shared with the other stores of this process on the same folder (two `ImageStore`s with one
    /// name): each would otherwise keep the budget only among the files it had counted.
    private let folder: Folder
    /// Commits, trims and removals, one at a time for every store on the folder.
    private var trimQueue: DispatchQueue { folder.queue }
    /// Whether a background trim is queued and not yet started, and the number of the schedule that
    /// queued it; writes meanwhile share it. A timer whose trim a wait ran early runs no later one.
    private let trimIsQueued = LockedBox((isQueued: false, ticket: 0))
    /// The least time, in seconds, from one listing of the folder to the background trim a write
    /// schedules. The count of the folder's bytes that commits keep holds the budget at every write of
    /// this process; the trim's listing catches what other processes wrote and what interrupted
    /// writes left. Run after each write instead, it listed a folder of thousands of files (about
    /// 10 ms for 4,000) once per write.
    let relistingInterval: TimeInterval
    /// The most bytes ``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)`` lets wait for
    /// the disk, each write counting its image's bytes and what its caching facts take
    /// (``HTTPCacheMetadata/memoryCost(forKey:)``: a server's validators may be as long as a header line);
    /// past it a load writes on its own thread, as a slow disk then sets the pace.
    let backgroundWriteByteLimit: Int
    /// 32 MiB: dozens of downloaded photos.
    static let defaultBackgroundWriteByteLimit = 32 << 20
    static let defaultRelistingInterval: TimeInterval = 10
    /// What was last counted in the folder plus what was written since, less what was removed, and
    /// what was removed while a count listed the folder. A file's replacement or removal and its share
    /// of the count change in one step under this lock, so the two never race each other off the count.
    private var usage: LockedBox<Usage> { folder.usage }
    /// How many times the folder was listed, by every store on it (for tests).
    var listingCount: Int { folder.listings.withLock { $0 } }
    /// The bytes the stores on the folder count in it without listing it; `nil` until listed (for tests).
    var countedByteCount: Int? { usage.withLock { $0.bytes } }
    /// Raised by every ``removeAll()`` of any store on the folder: a write that began before one is
    /// dropped, not committed, whichever store began it.
    private var generationBox: LockedBox<Int> { folder.generation }
    /// How many times each URL's image was replaced (``ImageStore/replacements``), by any store on the
    /// folder: a write queued by one store's load checks it at its commit, so a `removeImage(for:)` or a
    /// revalidation's new image in another store drops it, as a ``removeAll()`` of either does. Per store,
    /// the other's load wrote the old bytes back after the removal, and the next load served them.
    var replacements: LockedBox<ReplacementLedger> { folder.replacements }
    /// The URLs whose files memory hits marked used, waiting for the disk queue to date them, and
    /// whether a run that dates them is queued.
    private let pendingUses = LockedBox((urls: [URL](), isQueued: false))

    /// Opens the store at `directory`, and queues the removal of temporary files that an interrupted write
    /// left behind (see ``isLeftover(temporaryName:modified:now:openedAt:)``), never one of a write still
    /// in progress in another store on the same folder, nor one another process holds locked; trims
    /// remove those left later. The removal runs on the disk queue, so opening a store does no more than
    /// name its folder on the caller's thread (often the main thread, at launch): listing a folder of
    /// 20,000 files there took about 40 ms. The folder is
    /// made by the first write, so a store that only reads (or a command that only looks) leaves
    /// nothing behind.
    init(
        directory: URL, byteLimit: Int, attributes: any ExtendedAttributeStoring = FileExtendedAttributes(),
        relistingInterval: TimeInterval = DiskStore.defaultRelistingInterval,
        backgroundWriteByteLimit: Int = DiskStore.defaultBackgroundWriteByteLimit
    ) {
        self.directory = directory
        self.relistingInterval = relistingInterval
        self.backgroundWriteByteLimit = max(0, backgroundWriteByteLimit)
        self.directoryPath = directory.path.hasSuffix("/") ? directory.path : directory.path + "/"
        self.directoryPathBytes = Array(directoryPath.utf8)
        self.byteLimit = max(0, byteLimit)
        self.attributes = attributes
        self.folder = Folder.shared(atPath: Self.resolvedPath(of: directory))
        // The folder and its path, not the store: a store released at once still has its folder swept.
        let (folder, path) = (folder, directoryPath)
        let openedAt = Date()
        folder.queue.async {
            Self.removeLeftovers(among: Self.temporaries(inFolderAtPath: path), now: Date(), openedAt: openedAt)
        }
        // A store opened with a lower budget than its folder holds (a new version of the app) keeps it even
        // when it never writes: the trims that follow writes were the only ones. Not at once: the app has
        // more to do as it launches. One trim, shared with the writes' (``scheduleTrim()``).
        trimQueue.asyncAfter(deadline: .now() + relistingInterval) { [weak self] in self?.scheduleTrim() }
        Self.writesLandAtExit
    }

    /// The longest a program's exit waits, in all, for the writes its loads queued.
    static let exitWaitLimit: TimeInterval = 10

    /// Registers, once, a handler that runs as the program exits (`exit`, or its main code returning) and
    /// waits for the writes queued on every folder a store has open: a command-line tool that ends right
    /// after a load would otherwise end with the load's write still queued, and its next run download the
    /// image again. A process ended by a signal runs no handler, and loses them.
    private static let writesLandAtExit: Void = {
        _ = registeringProcess
        atexit { DiskStore.waitForQueuedWritesAtExit() }
    }()

    /// The process that registered the exit handler. A child forked from it without `exec` inherits the
    /// handler and the queued writes, but no thread that runs them: its exit must not wait for them.
    private static let registeringProcess = getpid()

    /// Waits, up to ``exitWaitLimit`` in all, for the writes queued on the folders that stores have open:
    /// bounded, so that a disk that hangs never keeps the program from ending.
    private static func waitForQueuedWritesAtExit() {
        // First, before any lock: a fork may have copied one held by a thread the child does not have.
        guard getpid() == registeringProcess else { return }
        let deadline = DispatchTime.now() + exitWaitLimit
        // Only where writes wait: a program that queued none exits without touching the queues.
        for folder in Folder.openFolders() where !folder.staged.withLock(\.isEmpty) {
            let landed = DispatchSemaphore(value: 0)
            folder.writeQueue.async { landed.signal() }
            guard landed.wait(timeout: deadline) == .success else { return }
        }
    }

    /// What the stores of this process open on one folder share.
    private final class Folder: Sendable {
        let queue = DispatchQueue(label: "AsyncImageCache.DiskStore.trim", qos: .utility)
        /// The writes of loads (``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``),
        /// one at a time, each committing through `queue`: a load never waits for either.
        let writeQueue = DispatchQueue(label: "AsyncImageCache.DiskStore.write", qos: .utility)
        /// The bytes of the writes on `writeQueue` that have not run yet, their caching facts included.
        let queuedWriteBytes = LockedBox(0)
        /// The writes on `writeQueue` not yet committed or dropped: reads that miss a file look here
        /// before they give up (``staged(forKey:)``).
        let staged = LockedBox(StagedWrites())
        let usage = LockedBox(Usage())
        let listings = LockedBox(0)
        /// When a store last began to list the folder; `nil` before any did.
        let lastListed = LockedBox<DispatchTime?>(nil)
        /// The files as the last trim listed them, coldest first, less what trims removed and plus what
        /// commits wrote since, and when it listed them: a commit making room within the relisting
        /// interval works from it instead of listing the folder again.
        let snapshot = LockedBox<(entries: [Entry], listedAt: DispatchTime)?>(nil)
        let generation = LockedBox(0)
        let replacements = LockedBox(ReplacementLedger())

        /// Every folder a store has open, by path; a folder goes with its last store.
        private static let open = LockedBox([String: WeakFolder]())

        private struct WeakFolder {
            weak var folder: Folder?
        }

        /// The folders that stores of this process have open, or that writes still queued keep.
        static func openFolders() -> [Folder] {
            open.withLock { $0.values.compactMap(\.folder) }
        }

        static func shared(atPath path: String) -> Folder {
            open.withLock { folders in
                if let folder = folders[path]?.folder { return folder }
                folders = folders.filter { $0.value.folder != nil }
                let folder = Folder()
                folders[path] = WeakFolder(folder: folder)
                return folder
            }
        }
    }

    /// The latest write for the URL with ``URL/cacheKey`` `key` still waiting for the disk, as its file will
    /// hold it; `nil` when none waits, or when it would not be committed (a ``removeAll()``, a
    /// replacement or a removal of the file has come since it was queued).
    ///
    /// Reads that miss the file look here and then at the file again: a write is forgotten only once its
    /// file is in place, so one of the three looks finds a write that lands meanwhile.
    private func staged(forKey key: String) -> StagedWrites.Write? {
        guard let write = folder.staged.withLock({ $0.latest(forKey: key) }), write.generation == generation,
            write.isCurrent()
        else { return nil }
        return write
    }

    /// The count of the bytes in a folder.
    ///
    /// Commits, trims and counts go one at a time on the disk queue, but a removal does not wait for
    /// it (loads remove what failed to decode, or what a server said not to keep). A count that lists
    /// the folder while a removal goes would include the file when its listing had read it first, and
    /// stay that much too high until the next count: so removals meanwhile are noted, and come off.
    private struct Usage {
        /// What was last counted plus what was written since, less what was removed; `nil` until
        /// counted and after ``removeAll()``, which recount on the next write.
        var bytes: Int?
        /// The names of the files removed (or whose attributes were written) since the listing of a count
        /// in progress began; `nil` when none is.
        var removedDuringListing: Set<String>?
    }

    /// The path of `directory` with its symbolic links resolved as far as it exists, so that stores on one
    /// folder share it whatever path they were given: the folder itself is made by the first write, and
    /// resolved only once it existed (`/var` is a link to `/private/var` on Apple platforms) a store
    /// opened before would name it apart from one opened after.
    static func resolvedPath(of directory: URL) -> String {
        var existing = directory.standardizedFileURL
        var missing: [String] = []
        while existing.path != "/" {
            if let resolved = realpath(existing.path, nil) {
                defer { free(resolved) }
                var path = URL(fileURLWithPath: String(cString: resolved), isDirectory: true)
                for component in missing.reversed() { path.appendPathComponent(component, isDirectory: true) }
                return path.standardizedFileURL.path
            }
            missing.append(existing.lastPathComponent)
            existing.deleteLastPathComponent()
        }
        return directory.standardizedFileURL.path
    }

    /// A temporary file's name: the prefix, the writing process's id, its PID namespace where known
    /// (`n` and the number, see ``pidNamespace``), a UUID.
    private static func temporaryName() -> String {
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
    private static let writesInProgress = LockedBox(Set<String>())

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
    private static func removeLeftovers(among temporaries: [Entry], now: Date, openedAt: Date? = nil) {
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
    private static func modificationDate(atPath path: String) -> Date? {
        var info = stat()
        return lstat(path, &info) == 0 ? modificationDate(of: info) : nil
    }

    private static func modificationDate(of info: stat) -> Date {
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        return Date(timeIntervalSince1970: Double(modified.tv_sec) + Double(modified.tv_nsec) / 1e9)
    }

    /// The file that holds `url`'s bytes.
    func fileURL(for url: URL) -> URL {
        URL(fileURLWithPath: filePath(for: url), isDirectory: false)
    }

    /// The path of the file that holds `url`'s bytes.
    func filePath(for url: URL) -> String {
        directoryPath + Self.fileName(for: url)
    }

    /// The name of the file that holds `url`'s bytes: the hex SHA-256 of its ``URL/cacheKey``.
    private static func fileName(for url: URL) -> String {
        SHA256.hexDigest(of: url.cacheKey)
    }

    /// The bytes stored for `url`, marking the file used; `nil` when there are none.
    ///
    /// Only a regular file no larger than the whole budget is read: the store never writes a larger
    /// one, so anything bigger was put there by someone else (a sparse file of gigabytes would
    /// otherwise be read whole into memory). The source answers for it instead. A symbolic link is
    /// not followed (`O_NOFOLLOW`): the store serves, and dates, only files of its own folder.
    ///
    /// Bytes still waiting for the disk (``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``)
    /// are found too.
    func data(for url: URL) -> Data? {
        stored(for: url)?.data
    }

    /// ``data(for:)`` with the identity of the file read, `nil` for bytes that still wait for the disk.
    func stored(for url: URL) -> (data: Data, identity: FileIdentity?)? {
        if let (data, identity) = file(for: url) { return (data, identity) }
        if let staged = staged(forKey: url.cacheKey) { return (staged.data, nil) }
        return file(for: url).map { ($0.data, $0.identity) }
    }

    /// ``data(for:)``, with the identity of the file read: what is repaired from these bytes goes onto
    /// that file only (``setPixelSize(_:for:readFrom:)``).
    func file(for url: URL) -> (data: Data, identity: FileIdentity)? {
        Self.withRegularFile(atPath: filePath(for: url)) { descriptor, status in
            guard status.st_size <= byteLimit, let data = Self.readBytes(from: descriptor, upTo: Int(status.st_size))
            else { return nil }
            _ = futimens(descriptor, nil)  // recency for the trim; failure only makes the file look older
            return (data, FileIdentity(status))
        }
    }

    /// Opens the regular file at `path` for reading, not through a symbolic link unless `followingLinks`,
    /// and calls `body` with its descriptor and status; `nil` for anything else at `path`.
    private static func withRegularFile<Result>(
        atPath path: String, followingLinks: Bool = false, _ body: (Int32, stat) -> Result?
    ) -> Result? {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, and reads run
        // during layout. It changes nothing for the regular files read below.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return body(descriptor, status)
    }

    /// Which file a read found: its device and inode. Another store or process may rename a new file
    /// into an entry's place at any moment; an attribute repaired from what was read is written
    /// through a descriptor checked against this, so it lands on the file that was read (or on
    /// nothing, once that file is gone), never on the one that replaced it.
    struct FileIdentity: Equatable, Sendable {
        let device: UInt64
        let inode: UInt64

        init(_ status: stat) {
            device = UInt64(truncatingIfNeeded: status.st_dev)
            inode = UInt64(truncatingIfNeeded: status.st_ino)
        }
    }

    /// Marks `url`'s file used, as a read does, for an image that memory served: dated on the disk
    /// queue, never on the caller's thread (hits come from layout). Callers throttle the marks (see
    /// ``DiskUseThrottle``). A file that is not there (trimmed since, or never written) is no error, and
    /// a symbolic link in its place is dated itself, never what it points at.
    func markUsed(_ url: URL) {
        let queuesRun = pendingUses.withLock { pending in
            pending.urls.append(url)
            defer { pending.isQueued = true }
            return !pending.isQueued
        }
        guard queuesRun else { return }
        trimQueue.async { [self] in
            let urls = pendingUses.withLock { pending in
                defer { pending = ([], false) }
                return pending.urls
            }
            for url in urls {
                withFilePath(for: url) { _ = utimensat(AT_FDCWD, $0, nil, AT_SYMLINK_NOFOLLOW) }
            }
        }
    }

    /// Up to `maxLength` bytes from the start of `url`'s file, for reading a header; a symbolic link
    /// there is not followed.
    func prefix(for url: URL, maxLength: Int) -> (data: Data, identity: FileIdentity)? {
        Self.prefixAndIdentity(ofFileAtPath: filePath(for: url), maxLength: maxLength, followingLinks: false)
    }

    /// Up to `maxLength` bytes from the start of the file at `path`; `nil` if it cannot be read, or
    /// when it is a symbolic link and `followingLinks` is `false`.
    static func prefix(ofFileAtPath path: String, maxLength: Int, followingLinks: Bool = true) -> Data? {
        prefixAndIdentity(ofFileAtPath: path, maxLength: maxLength, followingLinks: followingLinks)?.data
    }

    private static func prefixAndIdentity(ofFileAtPath path: String, maxLength: Int, followingLinks: Bool) -> (
        data: Data, identity: FileIdentity
    )? {
        withRegularFile(atPath: path, followingLinks: followingLinks) { descriptor, status in
            readBytes(from: descriptor, upTo: maxLength).map { ($0, FileIdentity(status)) }
        }
    }

    /// Up to `maxLength` bytes read from `descriptor` (fewer at end-of-file); `nil` if a read fails.
    private static func readBytes(from descriptor: Int32, upTo maxLength: Int) -> Data? {
        var data = Data(count: maxLength)
        var filled = 0
        let failed = data.withUnsafeMutableBytes { buffer -> Bool in
            while filled < maxLength {
                let count = read(descriptor, buffer.baseAddress! + filled, maxLength - filled)
                if count < 0, errno == EINTR { continue }
                guard count >= 0 else { return true }
                if count == 0 { break }
                filled += count
            }
            return false
        }
        guard !failed else { return nil }
        data.count = filled
        return data
    }

    /// Whether a file is stored for `url`.
    func contains(_ url: URL) -> Bool {
        FileManager.default.fileExists(atPath: filePath(for: url))
    }

    /// Whether a file is stored for `url`, or a write of one waits for the disk
    /// (``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``): the reads find its bytes
    /// either way.
    func isStoredOrQueued(_ url: URL) -> Bool {
        contains(url) || staged(forKey: url.cacheKey) != nil
    }

    /// The pixel size attribute of `url`'s file, if it has a valid one.
    ///
    /// This is the size lookup after a relaunch, so the path and the value stay on the stack: the
    /// work around the one `getxattr` is a hash and two small copies.
    func pixelSize(for url: URL) -> PixelSize? {
        pixelSize(forKey: url.cacheKey)
    }

    /// ``pixelSize(for:)`` by the URL's ``URL/cacheKey``, for a caller that has it already. Without an
    /// attribute, a write still waiting for the disk answers (the caller's header read finds the file
    /// if it lands meanwhile).
    func pixelSize(forKey key: String) -> PixelSize? {
        attributePixelSize(forKey: key) ?? staged(forKey: key)?.pixelSize
    }

    private func attributePixelSize(forKey key: String) -> PixelSize? {
        withFilePath(forKey: key) { path in
            withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { buffer in
                guard let length = attributes.read(named: PixelSizeAttribute.name, atPath: path, into: buffer) else {
                    return nil
                }
                return PixelSizeAttribute.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
            }
        }
    }

    /// Calls `body` with the NUL-terminated path of `url`'s file, built in a stack buffer.
    private func withFilePath<Result>(for url: URL, _ body: (UnsafePointer<CChar>) -> Result) -> Result {
        withFilePath(forKey: url.cacheKey, body)
    }

    /// ``withFilePath(for:_:)`` by the URL's ``URL/cacheKey``.
    private func withFilePath<Result>(forKey key: String, _ body: (UnsafePointer<CChar>) -> Result) -> Result {
        let directoryLength = directoryPathBytes.count
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: directoryLength + 65) { buffer in
            _ = buffer.initialize(from: directoryPathBytes)
            SHA256.writeHexDigest(
                of: key,
                into: UnsafeMutableBufferPointer(rebasing: buffer[directoryLength..<(directoryLength + 64)]))
            buffer[directoryLength + 64] = 0
            return buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// Writes the pixel size attribute onto `url`'s existing file (never through a link), and with
    /// `identity` only while that file is still the one there. Returns whether it was written.
    @discardableResult
    func setPixelSize(_ size: PixelSize, for url: URL, readFrom identity: FileIdentity? = nil) -> Bool {
        Self.withRegularFile(atPath: filePath(for: url)) { descriptor, status -> Bool? in
            guard identity == nil || identity == FileIdentity(status) else { return false }
            // Through the descriptor: a file renamed into place after the check keeps its own attribute.
            let value = PixelSizeAttribute.encode(size)
            return recounting(fileNamed: Self.fileName(for: url)) {
                (try? attributes.setValue(value, named: PixelSizeAttribute.name, onDescriptor: descriptor)) != nil
            }
        } ?? false
    }

    /// Runs `body`, which writes an attribute onto the file `name`, in one step with the count, as a
    /// removal is: an attribute can change what the file takes on disk (ext4 keeps those its inode has no
    /// room for in a block of their own), and the count and the last listing take the difference. A count
    /// whose listing is in progress counts the file as it is once the listing ends (see ``Usage``).
    ///
    /// A file that grows takes the tier over its budget when it was full: a background trim is then
    /// scheduled, as one is after a write of bytes, to bring it back within.
    private func recounting<Result>(fileNamed name: String, _ body: () -> Result) -> Result {
        let path = directoryPath + name
        let (result, isOverBudget) = usage.withLock { usage -> (Result, Bool) in
            let before = Self.fileSize(atPath: path)
            let result = body()
            let after = Self.fileSize(atPath: path)
            guard after != before else { return (result, false) }
            usage.bytes = usage.bytes.map { $0 - (before ?? 0) + (after ?? 0) }
            usage.removedDuringListing?.insert(name)
            folder.snapshot.withLock { snapshot in
                guard let index = snapshot?.entries.firstIndex(where: { $0.name == name }) else { return }
                if let after { snapshot?.entries[index].byteCount = after } else { snapshot?.entries.remove(at: index) }
            }
            return (result, (after ?? 0) > (before ?? 0) && (usage.bytes ?? 0) > byteLimit)
        }
        if isOverBudget { scheduleTrim() }
        return result
    }

    /// The HTTP caching facts kept with `url`'s file, if any, or with a write for it still waiting for the disk.
    func cacheMetadata(for url: URL) -> HTTPCacheMetadata? {
        if let metadata = attributeCacheMetadata(for: url) { return metadata }
        if let staged = staged(forKey: url.cacheKey) { return staged.metadata }
        return attributeCacheMetadata(for: url)
    }

    private func attributeCacheMetadata(for url: URL) -> HTTPCacheMetadata? {
        let path = filePath(for: url)
        func value(capacity: Int) -> [UInt8]? {
            withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 8) { buffer in
                path.withCString { attributes.read(named: HTTPCacheMetadata.attributeName, atPath: $0, into: buffer) }
                    .map { Array(buffer[0..<$0]) }
            }
        }
        // Most values fit in 2 KiB; long validators are read again into room for the largest value
        // an attribute can have on Linux (64 KiB). Unread, the entry would count as fresh forever.
        return (value(capacity: 2048) ?? value(capacity: 1 << 16)).flatMap(HTTPCacheMetadata.init(encoded:))
    }

    /// Replaces the HTTP caching facts of `url`'s existing file without touching its bytes.
    func setCacheMetadata(_ metadata: HTTPCacheMetadata, for url: URL) {
        let path = filePath(for: url)
        guard Self.isRegularFile(atPath: path) else { return }
        _ = recounting(fileNamed: Self.fileName(for: url)) { writeCacheMetadata(metadata, atPath: path) }
    }

    /// Writes `metadata` as the attribute of the file at `path`; whether it was written. Where the file
    /// system refuses it, it is written again without its validators: ext4 keeps all of a file's
    /// attributes in one 4 KiB block, and a server's entity tag can be longer. The entry's freshness then
    /// still holds, and once stale it is fetched whole instead of revalidated; without any attribute it
    /// would count as fresh until evicted, whatever `max-age` or `no-cache` the response said.
    @discardableResult
    private func writeCacheMetadata(_ metadata: HTTPCacheMetadata, atPath path: String) -> Bool {
        do {
            try attributes.setValue(metadata.encoded, named: HTTPCacheMetadata.attributeName, atPath: path)
            return true
        } catch {
            guard metadata.entityTag != nil || metadata.lastModified != nil else { return false }
            var withoutValidators = metadata
            withoutValidators.entityTag = nil
            withoutValidators.lastModified = nil
            return
                (try? attributes.setValue(
                    withoutValidators.encoded, named: HTTPCacheMetadata.attributeName, atPath: path)) != nil
        }
    }

    /// The number of ``removeAll()`` calls so far: read it before fetching the bytes of a write.
    var generation: Int { generationBox.withLock { $0 } }

    /// Runs `body` when no ``removeAll()`` has begun since `generation` was read, and keeps the next one
    /// from beginning until `body` returns; `nil` without running it otherwise. What `body` puts in
    /// memory is then in place before a store empties its memory after a `removeAll()`, or never put.
    func ifCurrent<Result>(_ generation: Int, _ body: () -> Result) -> Result? {
        generationBox.withLock { current in current == generation ? body() : nil }
    }

    /// Stores `data` for `url` atomically, with `pixelSize` in its attribute when the file system
    /// allows, then schedules a trim. Bytes that take more than the whole budget on disk (attributes
    /// included) are not stored (`EFBIG`), and an older copy of `url` goes: making room for them would
    /// empty the tier, and they would go next.
    /// With `generation`, bytes fetched before a ``removeAll()`` that has run since are not stored
    /// (`ECANCELED`), nor are they when `isCurrent`, asked in the same step, says no. `committed` runs in
    /// that step once the file is in place: no other write of this folder commits, and no `removeAll()`
    /// begins, in between.
    ///
    /// `isDropped` is asked in one step with the rename, as ``remove(_:)`` removes a file: a write queued
    /// before a removal of its URL's file is dropped then (`ECANCELED`), never put in place after it.
    func store(
        _ data: Data, pixelSize: PixelSize, metadata: HTTPCacheMetadata? = nil, for url: URL, generation: Int? = nil,
        isCurrent: () -> Bool = { true }, committed: () -> Void = {}, isDropped: () -> Bool = { false }
    ) throws {
        // Whether the write would still be committed, asked on the disk queue before anything is removed for
        // it (and `isDropped` again at the rename): a write dropped, or queued before a `removeAll()` or a
        // replacement, takes no room from the other files and leaves a file put in place since.
        func isWanted() -> Bool {
            if let generation, generation != self.generation { return false }
            return isCurrent() && !isDropped()
        }
        // Bytes that would take more than the whole budget are not kept, and the older copy goes: only it
        // (writes queued after this one stay), and only as a commit would replace it.
        func refuseAsTooLarge() -> POSIXError {
            trimQueue.sync {
                guard isWanted() else { return }
                _ = removeCounted(named: Self.fileName(for: url), unless: isDropped)
            }
            return POSIXError(.EFBIG)
        }
        guard data.count <= byteLimit else { throw refuseAsTooLarge() }
        let temporaryName = Self.temporaryName()
        let temporary = directory.appendingPathComponent(temporaryName)
        Self.writesInProgress.withLock { _ = $0.insert(temporaryName) }
        defer { Self.writesInProgress.withLock { _ = $0.remove(temporaryName) } }
        // Held open, and so locked, until the file is renamed into place or removed.
        let descriptor: Int32
        do {
            descriptor = try writeLocked(data, to: temporary)
        } catch  where !FileManager.default.fileExists(atPath: directory.path) {
            // The first write makes the folder, as does the first after a user removed it: once.
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            descriptor = try writeLocked(data, to: temporary)
        } catch  where Self.isOutOfSpace(error) {
            // The file system filled before the budget did: the least recently used entries make room,
            // as the budget would have, and the write is tried once more.
            guard let made = makeRoom(forBytes: data.count, if: isWanted) else { throw POSIXError(.ECANCELED) }
            guard made else { throw error }
            descriptor = try writeLocked(data, to: temporary)
        }
        defer { close(descriptor) }
        // A file system without extended attributes still gets the bytes; sizes then come from
        // the header.
        try? attributes.setValue(
            PixelSizeAttribute.encode(pixelSize), named: PixelSizeAttribute.name, atPath: temporary.path)
        // Where the caching facts cannot be written (a file system without extended attributes), a file
        // that goes stale is not kept: without them it would be read back, after a relaunch, as fresh
        // until evicted and never asked for again. Facts that never go stale need no attribute.
        if let metadata, !writeCacheMetadata(metadata, atPath: temporary.path), metadata.expires != nil {
            try? FileManager.default.removeItem(at: temporary)
            throw POSIXError(.EOPNOTSUPP)
        }
        // What the file takes on disk, its attributes included, as the budget counts it: a few bytes
        // under the budget can take a block over it.
        var written = stat()
        var measured = fstat(descriptor, &written) == 0
        // XFS reserves space past the end of a file it sees grow, until the file is closed: an 8 MB image
        // took 16 MB while open, and commits made room for twice its size. A truncation to its own size
        // gives that space back at once, but only where there is some: a size change makes XFS write the
        // file's bytes out to the device first, and waits for them (every commit did, 1 MB files included).
        if measured, Self.holdsSpacePastItsEnd(written) {
            _ = ftruncate(descriptor, written.st_size)
            measured = fstat(descriptor, &written) == 0
        }
        let counted = measured ? Self.countedSize(of: written) : data.count
        guard counted <= byteLimit else {
            try? FileManager.default.removeItem(at: temporary)
            throw refuseAsTooLarge()
        }
        let name = Self.fileName(for: url)
        let destination = directoryPath + name
        // Room is made before the file appears, so the budget holds throughout, not only once a
        // trim catches up. Commits go one at a time on the trim queue, and the caller waits for its
        // turn there: loads write through ``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``
        // instead, so that their delivery never waits behind another commit, a trim or a `removeAll()`.
        let renamed = trimQueue.sync { () -> Int32? in
            guard isWanted() else { return nil }
            let replaced = Self.fileSize(atPath: destination) ?? 0
            let before = knownUsage()
            // The older copy of `url` goes with the rename: room is made among the other files.
            if before - replaced + counted > byteLimit { trim(toBytes: byteLimit - counted, sparing: name) }
            // A rename keeps the file's modification date.
            let entry = Entry(
                name: name, path: destination, byteCount: counted,
                lastUsed: measured ? Self.modificationDate(of: written) : Date())
            let result = usage.withLock { usage -> Int32? in
                guard !isDropped() else { return nil }
                // Asked again in this step: a removal may have taken the older copy since.
                let replaced = Self.fileSize(atPath: destination) ?? 0
                let result = rename(temporary.path, destination)
                guard result == 0 else { return result }
                usage.bytes = usage.bytes.map { $0 - replaced + counted }
                // In the same step as the count: an attribute written onto the new file once the lock is
                // free (a size repair) finds its entry here and takes the difference onto it.
                folder.snapshot.withLock { snapshot in
                    snapshot?.entries.removeAll { $0.name == name }
                    snapshot?.entries.append(entry)
                }
                return result
            }
            if result == 0 { committed() }
            return result
        }
        guard renamed == 0 else {
            let code = renamed == nil ? .ECANCELED : POSIXErrorCode(rawValue: errno) ?? .EIO
            try? FileManager.default.removeItem(at: temporary)
            throw POSIXError(code)
        }
        // Another process may share the folder: a background trim re-reads what is really there.
        scheduleTrim()
    }

    /// ``store(_:pixelSize:metadata:for:generation:isCurrent:committed:isDropped:)`` on the folder's write queue,
    /// returning at once: for a load, whose delivery must not wait for the disk queue (another commit, a
    /// trim listing thousands of files, a `removeAll()` deleting them) nor hold one of the few threads
    /// of Swift's cooperative pool meanwhile. The write is atomic as any other, and its commit checks
    /// `generation` and `isCurrent` when it runs: queued before a ``removeAll()``, it is committed
    /// before it (and removed by it) or dropped. Failures are dropped: the next launch downloads
    /// the image again. ``waitForPendingTrims()`` waits for the writes queued before it, as a normal exit
    /// does (``exitWaitLimit``); one queued when the process is killed is lost, never left half-written.
    ///
    /// - Returns: `false`, queuing nothing, when the writes already queued on the folder hold
    ///   ``backgroundWriteByteLimit`` bytes or `data` and `metadata` would take them past it (a disk slower than the
    ///   downloads): the caller writes with ``store(_:pixelSize:metadata:for:generation:isCurrent:committed:isDropped:)``
    ///   then, so that the bytes waiting for the disk stay bounded. A write is queued whatever its size when
    ///   none waits.
    func storeInBackground(
        _ data: Data, pixelSize: PixelSize, metadata: HTTPCacheMetadata?, for url: URL, generation: Int,
        isCurrent: @escaping @Sendable () -> Bool
    ) -> Bool {
        let limit = backgroundWriteByteLimit
        let key = url.cacheKey
        // What the write holds until it lands: with tiny images and long validators, mostly the validators.
        let cost = data.count + (metadata?.memoryCost(forKey: key) ?? 0)
        let queued = folder.queuedWriteBytes.withLock { bytes -> Bool in
            guard bytes == 0 || cost <= limit - bytes else { return false }
            bytes += cost
            return true
        }
        guard queued else { return false }
        let write = StagedWrites.Write(
            data: data, pixelSize: pixelSize, metadata: metadata, generation: generation, isCurrent: isCurrent)
        // Numbered and queued in one step, so that writes run in the order of their numbers: the latest
        // write a read finds is the one whose file stays, also when two stores on the folder write one URL.
        folder.staged.withLock { staged in
            let number = staged.queue(write, forKey: key)
            folder.writeQueue.async { [self] in
                defer {
                    folder.queuedWriteBytes.withLock { $0 -= cost }
                    // After the rename: a read that missed the file finds it once the write is forgotten.
                    folder.staged.withLock { $0.finish(forKey: key) }
                }
                try? store(
                    data, pixelSize: pixelSize, metadata: metadata, for: url, generation: generation,
                    isCurrent: isCurrent, committed: {},
                    isDropped: { folder.staged.withLock { $0.isDropped(number, forKey: key) } })
            }
        }
        return true
    }

    /// Returns once the writes of ``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``
    /// queued before the call have committed or been dropped, without holding a thread meanwhile.
    func queuedWrites() async {
        await withCheckedContinuation { continuation in folder.writeQueue.async { continuation.resume() } }
    }

    /// Room a write needs beyond its bytes on a full file system: the folder's entry, the attributes,
    /// the rounding of the last block.
    private static let freeSpaceSlack = 64 * 1024

    /// Whether a write failed for want of space (`ENOSPC`, or a quota's `EDQUOT`).
    private static func isOutOfSpace(_ error: any Error) -> Bool {
        let error = error as NSError
        let posix = error.domain == NSPOSIXErrorDomain ? error : error.userInfo[NSUnderlyingErrorKey] as? NSError
        if error.domain == NSCocoaErrorDomain, error.code == CocoaError.fileWriteOutOfSpace.rawValue { return true }
        return posix?.domain == NSPOSIXErrorDomain && [ENOSPC, EDQUOT].contains(Int32(posix?.code ?? 0))
    }

    /// Removes least recently used entries until the file system has room for `byteCount` bytes, on
    /// the commit queue. Removes nothing, and returns `false`, when even every entry would not make
    /// room: the file system was filled by others, and emptying the tier would not help. Removes nothing, and
    /// returns `nil`, when `isWanted`, asked on that queue, says the write will not be committed.
    private func makeRoom(forBytes byteCount: Int, if isWanted: () -> Bool = { true }) -> Bool? {
        trimQueue.sync {
            guard isWanted() else { return nil }
            var info = statvfs()
            guard statvfs(directoryPath, &info) == 0 else { return false }
            let free = Int(info.f_bavail) * Int(info.f_frsize)
            let needed = byteCount + Self.freeSpaceSlack - free
            guard needed > 0 else { return true }  // room was made meanwhile
            let total = totalByteCount
            guard total >= needed else { return false }
            // The budget's own trim, to a budget `needed` bytes under what the folder holds.
            trim(toBytes: total - needed)
            return knownUsage() <= total - needed
        }
    }

    /// The bytes this store believes the folder holds, counted from the folder the first time.
    private func knownUsage() -> Int {
        if let known = usage.withLock({ $0.bytes }) { return known }
        let entries = listingForCount().entries
        return recordCount(entries.reduce(0) { $0 + $1.byteCount }, listed: entries)
    }

    /// Lists the folder to count it, on the disk queue; removals from here until ``recordCount(_:listed:)``
    /// are noted.
    private func listingForCount() -> (entries: [Entry], temporaries: [Entry]) {
        usage.withLock { $0.removedDuringListing = [] }
        return listing()
    }

    /// Records `bytes`, the sizes of the files in `listed`, as what the folder holds, corrected for the
    /// names a removal took (or an attribute changed) since the listing began: each counts what its path
    /// holds now instead (a file another process wrote there since, or nothing). With `snapshot`, the
    /// listing's entries, that becomes the last listing in the same step, its entries for those names
    /// corrected alike: an attribute written meanwhile took the difference onto the snapshot this
    /// replaces, and commits make room from its sizes.
    @discardableResult
    private func recordCount(
        _ bytes: Int, listed: [Entry], snapshot: (entries: [Entry], listedAt: DispatchTime)? = nil
    ) -> Int {
        usage.withLock { usage in
            var bytes = bytes
            var now: [String: Int?] = [:]
            if let removed = usage.removedDuringListing, !removed.isEmpty {
                for entry in listed where removed.contains(entry.name) { bytes -= entry.byteCount }
                for name in removed {
                    let size = Self.fileSize(atPath: directoryPath + name)
                    now[name] = size
                    bytes += size ?? 0
                }
            }
            usage.bytes = bytes
            usage.removedDuringListing = nil
            if let snapshot {
                // Under the lock that a main-thread size repair may wait for: walked only when a name changed.
                let entries =
                    now.isEmpty
                    ? snapshot.entries
                    : snapshot.entries.compactMap { entry -> Entry? in
                        guard let size = now[entry.name] else { return entry }
                        guard let size else { return nil }
                        var entry = entry
                        entry.byteCount = size
                        return entry
                    }
                folder.snapshot.withLock { $0 = (entries, snapshot.listedAt) }
            }
            return bytes
        }
    }

    /// The size of the regular file at `path` (a link is not followed), as ``entries()`` counts it.
    private static func fileSize(atPath path: String) -> Int? {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? countedSize(of: info) : nil
    }

    /// What a file counts against the budget: the space it takes on disk (`st_blocks`, in 512-byte units:
    /// whole blocks, and the block its extended attributes take where the inode has no room for them),
    /// never less than its size (a file system that keeps small files inline, or compresses them).
    static func countedSize(of info: stat) -> Int {
        max(Int(info.st_size), Int(info.st_blocks) * 512)
    }

    /// Whether a file takes more than its bytes' blocks and one more (the block ext4 gives attributes
    /// that do not fit in the inode): space reserved past its end, as XFS does for a growing file.
    static func holdsSpacePastItsEnd(_ info: stat) -> Bool {
        let block = max(Int(info.st_blksize), 512)
        let blocksOfBytes = (Int(info.st_size) + block - 1) / block * block
        return Int(info.st_blocks) * 512 > blocksOfBytes + block
    }

    /// Whether `path` is a regular file itself, not a link to one.
    private static func isRegularFile(atPath path: String) -> Bool {
        fileSize(atPath: path) != nil
    }

    /// Creates `file` (it must not exist), locks it and writes `data` to it; returns the descriptor,
    /// which keeps the lock until it is closed, so that no store sharing the folder takes the file for
    /// an interrupted write's leftover (see ``lockState(atPath:)``). Throws a `POSIXError`, the file
    /// removed: never a partial temporary left behind.
    private func writeLocked(_ data: Data, to file: URL) throws -> Int32 {
        let path = file.path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // A file system without locks (some network mounts) still takes the write.
        _ = flock(descriptor, LOCK_EX | LOCK_NB)
        let failure: Int32? = data.withUnsafeBytes { buffer in
            var written = 0
            while written < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                written += count
            }
            return nil
        }
        guard let failure else { return descriptor }
        close(descriptor)
        unlink(path)
        throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
    }

    /// Removes `url`'s file (or a link in its place; never a folder and its contents), and drops the
    /// writes for `url` queued in the background before the call: they are neither read nor committed.
    func remove(_ url: URL) {
        let key = url.cacheKey
        // In one step with the unlink, as a write's rename asks: a write queued before lands before it or never.
        _ = removeCounted(named: Self.fileName(for: url)) { folder.staged.withLock { $0.dropQueued(forKey: key) } }
    }

    /// Removes the file (or link) `name` and takes what it counted off the count, in one step with
    /// `first` and noting it for a count whose listing is in progress (see ``Usage``); whether it went.
    /// Nothing goes when `isDropped`, asked in that step, says so.
    private func removeCounted(
        named name: String, first: () -> Void = {}, unless isDropped: () -> Bool = { false }
    ) -> Bool {
        let path = directoryPath + name
        return usage.withLock { usage in
            first()
            guard !isDropped() else { return false }
            let size = Self.fileSize(atPath: path) ?? 0
            guard unlink(path) == 0 else { return false }
            usage.bytes = usage.bytes.map { $0 - size }
            usage.removedDuringListing?.insert(name)
            return true
        }
    }

    /// Removes `url`'s file and runs `committed` in one step, as a ``store(_:pixelSize:metadata:for:generation:isCurrent:committed:isDropped:)``
    /// commits: unless a ``removeAll()`` has begun since `generation` was read (then neither happens,
    /// and it returns `false`).
    @discardableResult
    func remove(_ url: URL, generation: Int, then committed: () -> Void) -> Bool {
        trimQueue.sync {
            guard generation == self.generation else { return false }
            remove(url)
            committed()
            return true
        }
    }

    /// Removes every stored file. On the trim queue, like commits: a write in progress is either
    /// committed before and removed here, or finds the generation raised and is dropped.
    ///
    /// The generation is raised once the files are gone, in one step with `emptyingMemory` (a store's
    /// memory tiers): a load that reads the new generation finds neither the old files nor what memory
    /// held of them, and one that read the old one keeps nothing.
    func removeAll(emptyingMemory: () -> Void = {}) {
        trimQueue.sync {
            for entry in entries() { _ = entry.remove() }
            usage.withLock { $0.bytes = nil }
            folder.snapshot.withLock { $0 = nil }
            generationBox.withLock { generation in
                generation += 1
                emptyingMemory()
            }
        }
    }

    /// Removes the files not used for longer than `maxAge` seconds; returns how many.
    /// `afterListing` runs once the folder is listed (for tests).
    ///
    /// On the disk queue, as commits and trims are: a write of this process never replaces a file
    /// between the listing and the removal, and each file that goes comes off the budget's count (the
    /// next write does not list the folder again). Reads are not
    /// queued, and another process may write meanwhile: each file's date is looked at again just
    /// before it goes, and one used since the listing stays.
    @discardableResult
    func removeEntries(unusedFor maxAge: TimeInterval, now: Date = Date(), afterListing: () -> Void = {}) -> Int {
        let cutoff = now.addingTimeInterval(-maxAge)
        return trimQueue.sync {
            var entries = entries()
            afterListing()
            // As a trim does: a file dated in the future would otherwise never be unused long enough.
            Self.dateFutureUseNow(&entries, now: now)
            var removed = 0
            for entry in entries where entry.lastUsed < cutoff {
                guard let lastUsed = Self.modificationDate(atPath: entry.path), lastUsed < cutoff,
                    removeCounted(named: entry.name)
                else { continue }
                removed += 1
            }
            return removed
        }
    }

    /// The total size of the stored files in bytes.
    var totalByteCount: Int { entries().reduce(0) { $0 + $1.byteCount } }

    struct Entry {
        /// The file's name in the folder.
        var name: String
        /// The file's full path.
        var path: String
        var byteCount: Int
        var lastUsed: Date

        /// Deletes the file; whether it went.
        func remove() -> Bool { unlink(path) == 0 }
    }

    /// Every stored file: the regular files in the folder, temporary files excluded (a symbolic
    /// link, a subfolder, a FIFO or a file whose name is not UTF-8 is not an entry, and is never followed).
    func entries() -> [Entry] {
        listing().entries
    }

    /// The regular files in the folder: the stored files, and apart the temporary ones.
    private func listing() -> (entries: [Entry], temporaries: [Entry]) {
        folder.listings.withLock { $0 += 1 }
        folder.lastListed.withLock { $0 = .now() }
        var entries: [Entry] = []
        var temporaries: [Entry] = []
        for entry in Self.regularFiles(inFolderAtPath: directoryPath) {
            if entry.name.hasPrefix(Self.temporaryPrefix) {
                temporaries.append(entry)
            } else {
                entries.append(entry)
            }
        }
        return (entries, temporaries)
    }

    /// The temporary files in the folder at `path`: only those are looked at (`fstatat`), not every stored
    /// file as a ``listing()`` does, nor is it counted as one.
    private static func temporaries(inFolderAtPath path: String) -> [Entry] {
        let prefix = Array(temporaryPrefix.utf8CString.dropLast())
        return regularFiles(inFolderAtPath: path) { strncmp($0, prefix, prefix.count) == 0 }
    }

    /// The regular files in the folder at `path` (which ends with a slash) whose names `isWanted` takes,
    /// each looked at only then; a name that is not UTF-8 is skipped.
    ///
    /// Read with `readdir` and `fstatat`: Foundation's directory listing with resource values took
    /// about 300 ms for 4,000 files here, where this takes 10, and a full tier lists its folder on
    /// every write that needs room.
    private static func regularFiles(
        inFolderAtPath path: String, named isWanted: (UnsafePointer<CChar>) -> Bool = { _ in true }
    ) -> [Entry] {
        guard let folder = opendir(path) else { return [] }
        defer { closedir(folder) }
        let descriptor = dirfd(folder)
        var files: [Entry] = []
        while let item = readdir(folder) {
            var info = stat()
            let name = withUnsafeBytes(of: &item.pointee.d_name) { bytes -> String? in
                let name = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
                guard isWanted(name), fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
                // Not UTF-8 (another program's file): repaired into a string, the name would name no file,
                // and a trim could neither remove it nor stop counting it. The store never writes one.
                return String(validatingCString: name)
            }
            guard let name, info.st_mode & S_IFMT == S_IFREG else { continue }
            files.append(
                Entry(
                    name: name, path: path + name, byteCount: countedSize(of: info),
                    lastUsed: modificationDate(of: info)))
        }
        return files
    }

    /// Removes least recently used files until the total is within `byteLimit`, at `now`, on the disk
    /// queue (where every count of the folder runs). `afterListing` runs once the folder is listed,
    /// before the count is recorded (for tests).
    func trim(now: Date = Date(), afterListing: () -> Void = {}) {
        trimQueue.sync { trim(toBytes: byteLimit, now: now, afterListing: afterListing) }
    }

    /// Removes least recently used files until the total is at most `limit` bytes, and records
    /// the total that remains. The file named `spared`, about to be replaced, is neither counted
    /// nor removed (but is recorded, as the replacement subtracts it). Temporary files that
    /// interrupted writes left since the store opened go too: they are not counted in the budget.
    private func trim(
        toBytes limit: Int, sparing spared: String? = nil, now: Date = Date(), afterListing: () -> Void = {}
    ) {
        // A commit within the relisting interval makes room from the last listing, kept up since.
        if let spared, let (kept, listedAt) = folder.snapshot.withLock({ $0 }),
            DispatchTime.now() < listedAt + relistingInterval, let counted = usage.withLock({ $0.bytes })
        {
            var entries = kept.filter { $0.name != spared }
            var total = counted - (Self.fileSize(atPath: directoryPath + spared) ?? 0)
            let removed = removeColdest(from: &entries, total: &total, limit: limit)
            folder.snapshot.withLock { $0?.entries.removeAll { removed.contains($0.name) } }
            return
        }
        let listedAt = DispatchTime.now()
        var (entries, temporaries) = listingForCount()
        afterListing()
        Self.dateFutureUseNow(&entries, now: now)
        Self.removeLeftovers(among: temporaries, now: now)
        let listed = entries
        entries.removeAll { $0.name == spared }
        var total = entries.reduce(0) { $0 + $1.byteCount }
        entries.sort { $0.lastUsed < $1.lastUsed }
        let removed = removeColdest(from: &entries, total: &total, limit: limit)
        recordCount(
            listed.reduce(0) { $0 + $1.byteCount }, listed: listed,
            snapshot: (listed.filter { !removed.contains($0.name) }.sorted { $0.lastUsed < $1.lastUsed }, listedAt))
    }

    /// Removes files of `entries`, sorted coldest first, until `total` is at most `limit`; the names removed.
    private func removeColdest(from entries: inout [Entry], total: inout Int, limit: Int) -> Set<String> {
        var removed = Set<String>()
        guard total > limit else { return removed }
        // A file larger than the limit goes in any case (a trim cannot end while it is there), so it goes
        // first, however recently used: the colder files it would otherwise take with it stay.
        for entry in entries where entry.byteCount > limit {
            if removeCounted(named: entry.name) {
                total -= entry.byteCount
                removed.insert(entry.name)
            }
        }
        var readSinceListing: [Entry] = []
        for entry in entries where total > limit && !removed.contains(entry.name) {
            // Reads are not queued: a file read since the listing is no longer among the coldest, and
            // stays; the next one goes instead.
            if let lastUsed = Self.modificationDate(atPath: entry.path), lastUsed > entry.lastUsed {
                readSinceListing.append(entry)
                continue
            }
            // Noted as any removal during the count is, so the count takes them off.
            if removeCounted(named: entry.name) {
                total -= entry.byteCount
                removed.insert(entry.name)
            }
        }
        // The budget comes first: when too few files were left unread, those read go too, the coldest
        // as listed first.
        for entry in readSinceListing where total > limit {
            if removeCounted(named: entry.name) {
                total -= entry.byteCount
                removed.insert(entry.name)
            }
        }
        entries.removeAll { removed.contains($0.name) }
        return removed
    }

    /// Dates `now` the entries last used after `now` (a clock set back, a file copied in), in the list
    /// and on disk: a file dated in the future would otherwise be the newest, kept by every trim and
    /// never expired, for good. Dated now, it ages from here like the others.
    private static func dateFutureUseNow(_ entries: inout [Entry], now: Date) {
        let seconds = now.timeIntervalSince1970.rounded(.down)
        let time = timespec(tv_sec: Int(seconds), tv_nsec: Int((now.timeIntervalSince1970 - seconds) * 1e9))
        for index in entries.indices where entries[index].lastUsed > now {
            entries[index].lastUsed = now
            _ = utimensat(AT_FDCWD, entries[index].path, [time, time], AT_SYMLINK_NOFOLLOW)
        }
    }

    /// Runs a trim on the background queue, at least ``relistingInterval`` after the folder was last
    /// listed; writes that arrive while one is pending share it. A store released meanwhile drops it;
    /// the next write of a store on the folder schedules another.
    func scheduleTrim() {
        let ticket = trimIsQueued.withLock { state -> Int? in
            guard !state.isQueued else { return nil }
            state.isQueued = true
            state.ticket += 1
            return state.ticket
        }
        guard let ticket else { return }
        let due = folder.lastListed.withLock { $0 }.map { $0 + relistingInterval } ?? .now()
        trimQueue.asyncAfter(deadline: due) { [weak self] in self?.runScheduledTrim(ticket: ticket) }
    }

    /// The trim ``scheduleTrim()`` scheduled as `ticket` (`nil`: whichever is waiting), on the disk queue,
    /// unless a wait ran it already.
    private func runScheduledTrim(ticket: Int? = nil) {
        let runs = trimIsQueued.withLock { state in
            guard state.isQueued, ticket == nil || ticket == state.ticket else { return false }
            state.isQueued = false
            return true
        }
        if runs { trim(toBytes: byteLimit) }
    }

    /// Blocks until the writes queued in the background before the call have committed (see
    /// ``storeInBackground(_:pixelSize:metadata:for:generation:isCurrent:)``), then runs the trim
    /// scheduled by earlier writes now, if one is still waiting for its time, and blocks until it and
    /// any other work on the disk queue have finished (for tests and the command line).
    func waitForPendingTrims() {
        folder.writeQueue.sync {}
        trimQueue.sync { runScheduledTrim() }
    }
}
