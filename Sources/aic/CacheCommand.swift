import AsyncImageCache
import Foundation

/// `aic cache stats|clear|trim [--name N] [--json]`: look at or prune a store's disk tier.
enum CacheCommand: Subcommand {
    static let name = "cache"
    static let summary = "show a store's disk cache, clear it, or remove entries unused for a while"
    static let synopsis = """
        aic cache stats [--name N] [--json]
        aic cache clear [--name N] [--json]
        aic cache trim [--max-age AGE] [--name N] [--json]
        """
    static let details = """
        The disk tier keeps the original bytes of remote images, one file each, in
        $XDG_CACHE_HOME/AsyncImageCache/NAME (~/.cache/AsyncImageCache/NAME when XDG_CACHE_HOME is unset).

        ACTIONS
          stats    entries, bytes on disk, the oldest entry (by last use) and the folder
          clear    remove every entry
          trim     remove the entries not used (read, written or shown from memory) for
                   longer than --max-age
          Both exit with status 1, saying why, when the folder refuses to remove entries
          (a read-only file system, no write permission); every action does when the folder
          is there but cannot be listed (a file in its place, a link loop).

        OPTIONS
          --name N          the store's name: letters, digits, '-', '_', '.' (default "default",
                            the store ImageStore.shared and the other aic commands use)
          --max-age AGE     for trim: seconds, or with a unit: 90m, 12h, 7d (default 7d)
          --json            print one JSON object instead of text

        EXAMPLES
          aic cache stats
          aic cache trim --max-age 2d
          aic cache clear --name avatars --json
        """
    static let options: Set<String> = ["--name", "--max-age"]
    static let flags: Set<String> = ["--json"]

    static let defaultMaxAge: Double = 7 * 24 * 60 * 60

    static func run(_ arguments: Arguments) async throws {
        let action = try arguments.single("action (stats, clear or trim)", of: name)
        guard ["stats", "clear", "trim"].contains(action) else {
            throw UsageError("unknown cache action \(action): use stats, clear or trim")
        }
        if action != "trim", arguments.value("--max-age") != nil { throw UsageError("--max-age is for trim only") }
        let maxAge = try arguments.duration("--max-age", default: defaultMaxAge)
        let store = try Inputs.store(named: arguments.value("--name") ?? "default")
        let json = arguments.flag("--json")
        try checkFolder(of: store)

        let before = Usage(store)
        switch action {
        case "stats":
            Console.out(json ? before.json(store).text : before.text(store))
        case "clear":
            store.removeAll()
            let after = Usage(store)
            // Counted, not assumed: a file the user may not delete stays.
            let removed = before.fileCount - after.fileCount
            report(removed: removed, before: before, after: after, store: store, json: json) {
                "cleared \($0)"
            }
            try failIfUnremovable(left: after, store: store)
        default:
            let removed = store.evictExpired(maxAge: maxAge)
            let after = Usage(store)
            report(removed: removed, before: before, after: after, store: store, json: json) {
                "trimmed \($0) not used for \(Formatted.exactAge(maxAge))"
            }
            if let oldest = after.oldest, -oldest.timeIntervalSinceNow > maxAge {
                try failIfUnremovable(left: after, store: store)
            }
        }
    }

    /// Fails (exit status 1) with the reason when the store's folder is there but cannot be listed (a
    /// regular file in its place, a link loop, no permission): the store would look empty. A folder
    /// not made yet is an empty store.
    private static func checkFolder(of store: ImageStore) throws(CommandFailure) {
        let path = store.directory.path
        guard let folder = opendir(path) else {
            guard errno == ENOENT else {
                throw CommandFailure("cannot read the cache folder \(path): \(String(cString: strerror(errno)))")
            }
            return
        }
        closedir(folder)
    }

    /// Fails (exit status 1) with the reason when entries that were due to go are left because the
    /// folder refuses removals (a read-only file system, no write permission): the summary alone,
    /// "0 entries ... 1 left", would pass for success. Entries left in a writable folder were
    /// written meanwhile by another process, and are no failure.
    private static func failIfUnremovable(left: Usage, store: ImageStore) throws(CommandFailure) {
        guard left.fileCount > 0, access(store.directory.path, W_OK) != 0 else { return }
        // How many of those left were due is not known (a trim keeps recent ones): the summary says what is left.
        let reason = String(cString: strerror(errno))
        throw CommandFailure("cannot remove entries from \"\(store.name)\" in \(store.directory.path): \(reason)")
    }

    /// `cleared 12 entries (3.4 MB) from "default"; 0 left (0 B)`, or the same as JSON.
    private static func report(
        removed: Int, before: Usage, after: Usage, store: ImageStore, json: Bool, what: (String) -> String
    ) {
        let freed = max(0, before.byteCount - after.byteCount)
        if json {
            let object = JSONObject([
                "name": .string(store.name), "folder": .string(store.directory.path), "removed": .int(removed),
                "removedBytes": .int(freed), "entries": .int(after.fileCount), "bytes": .int(after.byteCount),
            ])
            Console.out(object.text)
        } else {
            let entries = "\(removed) \(removed == 1 ? "entry" : "entries") (\(Formatted.bytes(freed)))"
            let left = "\(after.fileCount) left (\(Formatted.bytes(after.byteCount)))"
            Console.out("\(what(entries)) from \"\(store.name)\"; \(left)")
        }
    }

    /// What a store's disk tier holds.
    private struct Usage {
        let fileCount: Int
        let byteCount: Int
        /// When the least recently used entry was last used; `nil` for an empty store.
        let oldest: Date?

        init(_ store: ImageStore) {
            (fileCount, byteCount) = store.diskUsage()
            oldest = store.oldestDiskUse()
        }

        func text(_ store: ImageStore) -> String {
            let oldestText = oldest.map { "\(Formatted.date($0)) (\(Formatted.age(-$0.timeIntervalSinceNow)) ago)" }
            return """
                store    \(store.name)
                folder   \(store.directory.path)
                entries  \(fileCount)
                bytes    \(byteCount) (\(Formatted.bytes(byteCount)))
                oldest   \(oldestText ?? "-")
                """
        }

        func json(_ store: ImageStore) -> JSONObject {
            JSONObject([
                "name": .string(store.name), "folder": .string(store.directory.path), "entries": .int(fileCount),
                "bytes": .int(byteCount), "oldest": oldest.map { .string(Formatted.date($0)) } ?? .null,
            ])
        }
    }
}
