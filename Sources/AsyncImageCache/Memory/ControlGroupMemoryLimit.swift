import Foundation

/// The memory limit Linux control groups put on this process, which `ProcessInfo.physicalMemory`
/// does not see: in a container or a systemd unit limited to 1 GiB on a 256 GiB host, Foundation
/// still reports 256 GiB.
///
/// It finds the cgroup file systems in `/proc/self/mountinfo` and the process's groups in
/// `/proc/self/cgroup`, then reads the limits of the process's group and of every group above it
/// up to the mount's root (a parent's limit binds its children): `memory.max` and `memory.high`
/// under cgroup v2, `memory.limit_in_bytes` under v1. The lowest one wins. A mount whose root is the
/// process's group (a container that sees only its own group) is read at its mount point; a mount
/// that shows none of the process's groups (another group bind-mounted somewhere) is not read. Only
/// plain text files are read; nothing is written.
enum ControlGroupMemoryLimit {
    /// The lowest memory limit of the process's control groups in bytes, or `nil` where none is set
    /// (or there are no control groups, as off Linux). `root` prefixes every path read, for tests.
    static func bytes(root: String = "/") -> UInt64? {
        let base = root.hasSuffix("/") ? String(root.dropLast()) : root
        guard let mountInfo = read(base + "/proc/self/mountinfo"), let groups = read(base + "/proc/self/cgroup")
        else { return nil }
        let memberships = Membership.parse(groups)
        var lowest: UInt64?
        for mount in Mount.parse(mountInfo) {
            guard let group = memberships.first(where: { mount.holds($0) }) else { continue }
            for folder in mount.folders(from: group.path) {
                for name in mount.limitFileNames {
                    guard let text = read(base + folder + "/" + name), let limit = parseLimit(text) else { continue }
                    lowest = min(lowest ?? limit, limit)
                }
            }
        }
        return lowest
    }

    /// A limit file's value: `nil` for `max` (v2), for v1's "no limit" (the largest page-aligned
    /// 63-bit number), for anything unreadable, and for less than 1 MiB, which no running process
    /// lives within (the kernel accepts `memory.high` of 0): a budget from it would turn the cache off.
    static func parseLimit(_ text: String) -> UInt64? {
        guard let value = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)), value < 1 << 62,
            value >= 1 << 20
        else { return nil }
        return value
    }

    private static func read(_ path: String) -> String? {
        // Small text files; a missing or unreadable one is simply not there.
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A line of `/proc/self/cgroup`: the process's group in one hierarchy.
    struct Membership: Equatable {
        /// `true` for the v2 (unified) hierarchy, `false` for a v1 hierarchy that has the memory controller.
        var isUnified: Bool
        /// The group's path from the hierarchy's root, `/` for the root itself.
        var path: String

        /// The memberships in `text` that can carry a memory limit: the unified one, and the v1 one of the
        /// memory controller. Lines read `hierarchy-ID:controllers:path`; the path may itself hold colons.
        static func parse(_ text: String) -> [Membership] {
            text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
                guard fields.count == 3, fields[2].hasPrefix("/") else { return nil }
                let path = String(fields[2])
                if fields[0] == "0" && fields[1].isEmpty { return Membership(isUnified: true, path: path) }
                if fields[1].split(separator: ",").contains("memory") {
                    return Membership(isUnified: false, path: path)
                }
                return nil
            }
        }
    }

    /// A cgroup file system mounted in this process's view, from `/proc/self/mountinfo`.
    struct Mount: Equatable {
        var isUnified: Bool
        /// The group the mount shows at its mount point (`/` unless it shows a group below the root).
        var root: String
        var mountPoint: String

        /// The cgroup mounts in `text`: `cgroup2` ones, and `cgroup` ones with the memory controller.
        /// A line reads `ID parent major:minor root mount-point options [optional fields...] - type source
        /// super-options`, with spaces and backslashes in paths written as octal escapes (`\040`).
        static func parse(_ text: String) -> [Mount] {
            // A host may have thousands of mounts: only cgroup ones are split into fields.
            text.split(separator: "\n").compactMap { line in
                guard line.contains(" - cgroup") else { return nil }
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                // Six fields come first, then optional ones up to the lone "-".
                guard fields.count > 7, let separator = fields[6...].firstIndex(of: "-"), separator + 1 < fields.count
                else { return nil }
                let type = fields[separator + 1]
                let isUnified: Bool
                if type == "cgroup2" {
                    isUnified = true
                } else if type == "cgroup", separator + 3 < fields.count,
                    fields[separator + 3].split(separator: ",").contains("memory")
                {
                    isUnified = false
                } else {
                    return nil
                }
                return Mount(isUnified: isUnified, root: unescape(fields[3]), mountPoint: unescape(fields[4]))
            }
        }

        /// Whether `membership` is a group of this mount's hierarchy.
        func holds(_ membership: Membership) -> Bool { membership.isUnified == isUnified }

        /// The names of the files that hold a limit in each group folder.
        var limitFileNames: [String] { isUnified ? ["memory.max", "memory.high"] : ["memory.limit_in_bytes"] }

        /// The folders of the group at `path` and of every group above it that this mount shows, from the
        /// group's own up to the mount point; none when the mount's root is neither the group nor above
        /// it (another group's bind mount; a group outside a cgroup namespace's root, shown as `/..`).
        func folders(from path: String) -> [String] {
            let point = mountPoint == "/" ? "" : mountPoint
            var components = path.split(separator: "/").map(String.init)
            let rootComponents = root.split(separator: "/").map(String.init)
            guard components.starts(with: rootComponents), !components.contains("..") else { return [] }
            components.removeFirst(rootComponents.count)
            var folders: [String] = []
            while true {
                let folder = point + components.map { "/" + $0 }.joined()
                folders.append(folder.isEmpty ? "/" : folder)
                if components.isEmpty { return folders }
                components.removeLast()
            }
        }

        /// `field` with mountinfo's octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash)
        /// decoded.
        private static func unescape(_ field: Substring) -> String {
            guard field.contains("\\") else { return String(field) }
            var bytes: [UInt8] = []
            var utf8 = Array(field.utf8)[...]
            while let byte = utf8.popFirst() {
                if byte == UInt8(ascii: "\\"), utf8.count >= 3,
                    let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8)
                {
                    bytes.append(value)
                    utf8.removeFirst(3)
                } else {
                    bytes.append(byte)
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
