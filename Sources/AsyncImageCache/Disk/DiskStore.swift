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
    let directoryPath: String
    private let directoryPathBytes: [UInt8]
    let byteLimit: Int
    let attributes: any ExtendedAttributeStoring
    #if canImport(CXattr)
    /// The folder held open for size lookups by file name; `nil` when `attributes` is not the file
    /// system's own (a test's stand-in, which lookups must go through).
    let folderDescriptor: FolderDescriptor?
    #endif

    static let temporaryPrefix = ".tmp-"
    /// Shared with the other stores of this process on the same folder (two `ImageStore`s with one
    /// name): each would otherwise keep the budget only among the files it had counted.
    let folder: Folder
    /// Commits, trims and removals, one at a time for every store on the folder.
    var trimQueue: DispatchQueue { folder.queue }
    /// Whether a background trim is queued and not yet started, and the number of the schedule that
    /// queued it; writes meanwhile share it. A timer whose trim a wait ran early runs no later one.
    let trimIsQueued = LockedBox((isQueued: false, ticket: 0))
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
    var usage: LockedBox<Usage> { folder.usage }
    /// How many times the folder was listed, by every store on it (for tests).
    var listingCount: Int { folder.listings.withLock { $0 } }
    /// The bytes the stores on the folder count in it without listing it; `nil` until listed (for tests).
    var countedByteCount: Int? { usage.withLock { $0.bytes } }
    /// Raised by every ``removeAll()`` of any store on the folder: a write that began before one is
    /// dropped, not committed, whichever store began it.
    var generationBox: LockedBox<Int> { folder.generation }
    /// How many times each URL's image was replaced (``ImageStore/replacements``), by any store on the
    /// folder: a write queued by one store's load checks it at its commit, so a `removeImage(for:)` or a
    /// revalidation's new image in another store drops it, as a ``removeAll()`` of either does. Per store,
    /// the other's load wrote the old bytes back after the removal, and the next load served them.
    var replacements: LockedBox<ReplacementLedger> { folder.replacements }
    /// The URLs whose files memory hits marked used, waiting for the disk queue to date them, and
    /// whether a run that dates them is queued.
    private let pendingUses = LockedBox((urls: [URL](), isQueued: false))
    /// The attribute writes that size lookups left for the disk queue (``writeLater(_:)``), and whether a
    /// run that makes them is queued.
    private let pendingAttributeWrites = LockedBox((writes: [@Sendable () -> Void](), isQueued: false))

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
        backgroundWriteByteLimit: Int = DiskStore.defaultBackgroundWriteByteLimit,
        folderRecheckInterval: TimeInterval = 1
    ) {
        self.directory = directory
        self.relistingInterval = relistingInterval
        self.backgroundWriteByteLimit = max(0, backgroundWriteByteLimit)
        self.directoryPath = directory.path.hasSuffix("/") ? directory.path : directory.path + "/"
        self.directoryPathBytes = Array(directoryPath.utf8)
        self.byteLimit = max(0, byteLimit)
        self.attributes = attributes
        #if canImport(CXattr)
        self.folderDescriptor =
            attributes is FileExtendedAttributes
            ? FolderDescriptor(path: directoryPath, recheckInterval: folderRecheckInterval) : nil
        #endif
        self.folder = Folder.shared(atPath: Self.resolvedPath(of: directory))
        // The folder and its path, not the store: a store released at once still has its folder swept.
        let (folder, path) = (folder, directoryPath)
        let openedAt = Date()
        folder.queue.async {
            Self.removeLeftovers(among: Self.temporaries(inFolderAtPath: path), now: Date(), openedAt: openedAt)
            Self.removeFoldersMovedAside(from: folder.path)
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
    final class Folder: Sendable {
        /// The folder's path, its symbolic links resolved (``resolvedPath(of:)``), without a final slash.
        let path: String
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

        private init(path: String) { self.path = path }

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
                let folder = Folder(path: path)
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
    func staged(forKey key: String) -> StagedWrites.Write? {
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
    struct Usage {
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

    /// The file that holds `url`'s bytes.
    func fileURL(for url: URL) -> URL {
        URL(fileURLWithPath: filePath(for: url), isDirectory: false)
    }

    /// The path of the file that holds `url`'s bytes.
    func filePath(for url: URL) -> String {
        directoryPath + Self.fileName(for: url)
    }

    /// The name of the file that holds `url`'s bytes: the hex SHA-256 of its ``URL/cacheKey``.
    static func fileName(for url: URL) -> String {
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

    /// What a read of an entry found: its bytes, the file they came from (`nil` for a write still waiting for
    /// the disk), and the caching facts kept with them (`nil` for none).
    struct StoredEntry {
        let data: Data
        let identity: FileIdentity?
        let metadata: HTTPCacheMetadata?
    }

    /// ``data(for:)`` with the file read and the caching facts kept with its bytes: the file's attribute, read
    /// after them, or a waiting write's own. Another store or process may rename a new file into place between
    /// the two reads: the file is then read again (three reads at most), so that bytes and facts come from one
    /// file. A file gone meanwhile gives its bytes without facts.
    func stored(for url: URL) -> StoredEntry? {
        var entry = fileOrWaitingWrite(for: url)
        for _ in 1..<3 {
            guard let read = entry?.identity, let now = identity(for: url), now != read else { break }
            entry = fileOrWaitingWrite(for: url)
        }
        return entry
    }

    /// The file's bytes and facts, else a waiting write's, else the file's (a write may land between the looks).
    private func fileOrWaitingWrite(for url: URL) -> StoredEntry? {
        func fromFile() -> StoredEntry? {
            file(for: url).map {
                StoredEntry(data: $0.data, identity: $0.identity, metadata: attributeCacheMetadata(for: url))
            }
        }
        if let entry = fromFile() { return entry }
        if let staged = staged(forKey: url.cacheKey) {
            return StoredEntry(data: staged.data, identity: nil, metadata: staged.metadata)
        }
        return fromFile()
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
    /// `withoutAccessTime` for a header read of the tier's own files, which leaves the access time as it
    /// is (the tier dates its files' use by their modification time, set with the access time). Otherwise a
    /// read after a change to the file's attributes (a size written back, a `304`'s caching facts) has the
    /// file system journal a new access time: a sixth of the time of a size lookup that reads a header,
    /// in the sizes benchmark.
    private static func withRegularFile<Result>(
        atPath path: UnsafePointer<CChar>, followingLinks: Bool = false, withoutAccessTime: Bool = false,
        _ body: (Int32, stat) -> Result?
    ) -> Result? {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, and reads run
        // during layout. It changes nothing for the regular files read below.
        let flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW)
        var descriptor = open(path, flags | (withoutAccessTime ? Self.noAccessTime : 0))
        // Only a file's owner may read it without dating the access: another user's file is opened as usual.
        if descriptor < 0, withoutAccessTime, Self.noAccessTime != 0, errno == EPERM { descriptor = open(path, flags) }
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return body(descriptor, status)
    }

    /// The identity of the regular file at `url`'s path now (never through a symbolic link); `nil` when there
    /// is none.
    func identity(for url: URL) -> FileIdentity? {
        var status = stat()
        guard lstat(filePath(for: url), &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return FileIdentity(status)
    }

    /// `O_NOATIME` where the system has it (Linux), else 0.
    private static var noAccessTime: Int32 {
        #if os(Linux) || os(Android)
        0o1000000
        #else
        0
        #endif
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

    /// Runs `write`, which writes an attribute onto a file of the folder, on the disk queue, never on the
    /// calling thread, ``attributeWriteDelay`` later: a size lookup that found a cached file's attribute
    /// lost reads the header during layout, and writing the size back (a change to the file's inode that
    /// the file system journals, and the folder's recount) took more than half of that lookup's time.
    /// Made at once, the writes also slowed the lookups still coming in the same layout (by about 1.5 us
    /// each in the sizes benchmark); so the writes of one burst of lookups wait for it to end and go in
    /// one run. ``waitForPendingTrims()`` makes them at once. `write` runs on the disk
    /// queue, where commits go one at a time, and checks for itself that what it writes is still current.
    func writeLater(_ write: @escaping @Sendable () -> Void) {
        let queuesRun = pendingAttributeWrites.withLock { pending in
            pending.writes.append(write)
            defer { pending.isQueued = true }
            return !pending.isQueued
        }
        guard queuesRun else { return }
        trimQueue.asyncAfter(deadline: .now() + Self.attributeWriteDelay) { [self] in
            makeWaitingAttributeWrites(endingTheRun: true)
        }
    }

    /// How long a write queued by ``writeLater(_:)`` waits for more before its run.
    static let attributeWriteDelay = DispatchTimeInterval.milliseconds(100)

    /// Makes the writes ``writeLater(_:)`` queued; on the disk queue. `endingTheRun` for the run it
    /// scheduled, after which the next write schedules another.
    func makeWaitingAttributeWrites(endingTheRun: Bool) {
        let writes = pendingAttributeWrites.withLock { pending in
            defer {
                pending.writes = []
                if endingTheRun { pending.isQueued = false }
            }
            return pending.writes
        }
        for write in writes { write() }
    }

    /// Up to `maxLength` bytes from the start of the file at `path`; `nil` if it cannot be read, or
    /// when it is a symbolic link and `followingLinks` is `false`.
    static func prefix(ofFileAt path: FileSystemPath, maxLength: Int, followingLinks: Bool = true) -> Data? {
        let found = path.withCString {
            prefixAndIdentity(ofFileAtPath: $0, maxLength: maxLength, followingLinks: followingLinks)
        }
        return found?.data
    }

    /// Up to `maxLength` bytes from the start of the regular file at `path`, and its version from the open
    /// descriptor (`fstat`), with no `stat` by path: `nil` when the status after the read differs from the one
    /// before (the file changed while it was read). `nil` altogether if it cannot be read, and when `path`
    /// names a symbolic link, whose version (``SystemFileInspector``) is the link's as well as the file's.
    /// `afterRead` runs between the read and the second status.
    static func prefixAndStamp(
        ofRegularFileAt path: FileSystemPath, maxLength: Int, afterRead: () -> Void = {}
    ) -> (data: Data, stamp: FileStamp?)? {
        path.withCString { path in
            withRegularFile(atPath: path, followingLinks: false) { descriptor, before in
                guard let data = readBytes(from: descriptor, upTo: maxLength) else { return nil }
                afterRead()
                var after = stat()
                let stamp = FileStamp(status: before)
                let isUnchanged = fstat(descriptor, &after) == 0 && FileStamp(status: after) == stamp
                return (data, isUnchanged ? stamp : nil)
            }
        }
    }

    private static func prefixAndIdentity(
        ofFileAtPath path: UnsafePointer<CChar>, maxLength: Int, followingLinks: Bool, withoutAccessTime: Bool = false
    ) -> (
        data: Data, identity: FileIdentity
    )? {
        withRegularFile(atPath: path, followingLinks: followingLinks, withoutAccessTime: withoutAccessTime) {
            descriptor, status in
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

    /// Whether a file is stored for `url`: a regular file at its path no larger than the budget, as the reads
    /// take it (a symbolic link or a folder there is none). A larger one, left by a store with a larger budget
    /// (an earlier launch, or another process on the folder) until a trim removes it, is never read (see
    /// ``data(for:)``): its loads ask the source, and count under its slots.
    func contains(_ url: URL) -> Bool {
        var status = stat()
        return lstat(filePath(for: url), &status) == 0 && status.st_mode & S_IFMT == S_IFREG
            && status.st_size <= byteLimit
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
        withFilePath(forKey: key) { pixelSize(atPath: $0, key: key) }
    }

    /// ``pixelSize(forKey:)`` for `key`'s file at `path`.
    private func pixelSize(atPath path: UnsafePointer<CChar>, key: String) -> PixelSize? {
        attributePixelSize(atPath: path) ?? staged(forKey: key)?.pixelSize
    }

    /// Where a size lookup of a cached file found the size.
    enum StoredSize {
        /// In the file's attribute, or a write still waiting for the disk.
        case attribute(PixelSize)
        /// In the header of the file `readFrom` (its attribute lost), which `parse` read.
        case header(PixelSize, readFrom: FileIdentity)
    }

    /// ``pixelSize(forKey:)``, else ``headerPixelSize(forKey:parse:)``, the file's path made once for both
    /// (its name is a SHA-256 of `key`). `nil` when there is neither.
    func storedPixelSize(forKey key: String, parse: ((Int) -> Data?) -> PixelSize?) -> StoredSize? {
        withFilePath(forKey: key) { path in
            if let size = pixelSize(atPath: path, key: key) { return .attribute(size) }
            return headerPixelSize(atPath: path, parse: parse).map { .header($0.size, readFrom: $0.file) }
        }
    }

    /// The size `parse` reads from the first bytes of `key`'s file (it asks for a count of them, and may ask
    /// again for more), not through a symbolic link, and the file it read. The read leaves the file's access
    /// time alone (see ``withRegularFile(atPath:followingLinks:withoutAccessTime:_:)``).
    func headerPixelSize(
        forKey key: String, parse: ((Int) -> Data?) -> PixelSize?
    ) -> (size: PixelSize, file: FileIdentity)? {
        withFilePath(forKey: key) { headerPixelSize(atPath: $0, parse: parse) }
    }

    private func headerPixelSize(
        atPath path: UnsafePointer<CChar>, parse: ((Int) -> Data?) -> PixelSize?
    ) -> (size: PixelSize, file: FileIdentity)? {
        var file: FileIdentity?
        let size = parse { length in
            let prefix = Self.prefixAndIdentity(
                ofFileAtPath: path, maxLength: length, followingLinks: false, withoutAccessTime: true)
            file = prefix?.identity  // the last read is the one parsed
            return prefix?.data
        }
        guard let size, let file else { return nil }
        return (size, file)
    }

    /// The size in the attribute of the file at `path`, one of the folder's.
    private func attributePixelSize(atPath path: UnsafePointer<CChar>) -> PixelSize? {
        withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { buffer in
            #if canImport(CXattr)
            if let folderDescriptor {
                // The file's name is the path's last 64 bytes, before its NUL.
                let read = folderDescriptor.readAttribute(
                    named: PixelSizeAttribute.name, ofFile: path + directoryPathBytes.count, into: buffer)
                switch read {
                case .read(let length):
                    return PixelSizeAttribute.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
                case .absent: return nil
                case .unavailable: break
                }
            }
            #endif
            guard let length = attributes.read(named: PixelSizeAttribute.name, atPath: path, into: buffer) else {
                return nil
            }
            return PixelSizeAttribute.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
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

    /// Replaces the HTTP caching facts of `url`'s existing file (never through a link) without touching its
    /// bytes. With `checked`, the facts a revalidation began with, not on a file whose own facts name another
    /// response (``HTTPCacheMetadata/namesAnotherResponse(than:)``): another store or process wrote it after
    /// the check began, and the answer is not about its bytes. Compared and written on one file: through its
    /// descriptor, so that a file renamed into place after the comparison keeps its own facts.
    func setCacheMetadata(_ metadata: HTTPCacheMetadata, for url: URL, over checked: HTTPCacheMetadata? = nil) {
        _ = Self.withRegularFile(atPath: filePath(for: url)) { descriptor, status -> Bool? in
            if let checked {
                // Read at the path, so compared only while the path still names the file opened.
                let onFile = attributeCacheMetadata(for: url)
                guard identity(for: url) == FileIdentity(status) else { return false }
                if let onFile, onFile.namesAnotherResponse(than: checked) { return false }
            }
            return recounting(fileNamed: Self.fileName(for: url)) {
                (try? writeCacheMetadata(metadata) {
                    try attributes.setValue($0, named: HTTPCacheMetadata.attributeName, onDescriptor: descriptor)
                }) != nil
            }
        }
    }

    /// Writes `metadata` as the attribute of the file at `path`. Where the file system refuses it, it is
    /// written again without its validators: ext4 keeps all of a file's attributes in one 4 KiB block,
    /// and a server's entity tag can be longer. The entry's freshness then still holds, and once stale it
    /// is fetched whole instead of revalidated; without any attribute it would count as fresh until
    /// evicted, whatever `max-age` or `no-cache` the response said. Throws the file system's last refusal
    /// (`ENOSPC` on a full one) where neither is written.
    func writeCacheMetadata(_ metadata: HTTPCacheMetadata, atPath path: String) throws {
        try writeCacheMetadata(metadata) {
            try attributes.setValue($0, named: HTTPCacheMetadata.attributeName, atPath: path)
        }
    }

    /// ``writeCacheMetadata(_:atPath:)`` with `write`, which sets the attribute to the bytes it is given.
    private func writeCacheMetadata(_ metadata: HTTPCacheMetadata, with write: ([UInt8]) throws -> Void) throws {
        do {
            try write(metadata.encoded)
        } catch {
            guard metadata.entityTag != nil || metadata.lastModified != nil else { throw error }
            var withoutValidators = metadata
            withoutValidators.entityTag = nil
            withoutValidators.lastModified = nil
            try write(withoutValidators.encoded)
        }
    }
}
