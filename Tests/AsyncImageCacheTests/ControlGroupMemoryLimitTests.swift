import Foundation
import Testing

@testable import AsyncImageCache

/// The memory limit of the process's control groups, read from a copy of `/proc/self` and the cgroup
/// file systems laid out in a temporary folder as each kind of Linux machine has them.
@Suite struct ControlGroupMemoryLimitTests {
    private static let mebibyte: UInt64 = 1 << 20

    /// A root folder holding `files` (path from the root: contents).
    private func machine(_ files: [String: String]) throws -> TemporaryDirectory {
        let folder = TemporaryDirectory("cgroup")
        for (path, contents) in files {
            let url = folder.url.appendingPathComponent(String(path.dropFirst()))
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: url)
        }
        return folder
    }

    private static let unifiedMount =
        "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n"

    @Test func aContainersOwnLimitIsReadAtTheMountPoint() throws {
        // Docker with a cgroup namespace: the process sees its group as the root.
        let folder = try machine([
            "/proc/self/mountinfo": "22 1 0:21 / / rw - overlay overlay rw\n" + Self.unifiedMount,
            "/proc/self/cgroup": "0::/\n",
            "/sys/fs/cgroup/memory.max": "1073741824\n",
            "/sys/fs/cgroup/memory.high": "max\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: folder.url.path) == 1024 * Self.mebibyte)
    }

    @Test func aParentsLowerLimitBindsTheGroupBelowIt() throws {
        // A systemd unit inside a slice whose limit is lower than the unit's own.
        let folder = try machine([
            "/proc/self/mountinfo": Self.unifiedMount,
            "/proc/self/cgroup": "0::/app.slice/worker.service\n",
            "/sys/fs/cgroup/app.slice/worker.service/memory.max": "max\n",
            "/sys/fs/cgroup/app.slice/worker.service/memory.high": "\(900 * Self.mebibyte)\n",
            "/sys/fs/cgroup/app.slice/memory.max": "\(700 * Self.mebibyte)\n",
            "/sys/fs/cgroup/app.slice/memory.high": "max\n",
            "/sys/fs/cgroup/memory.max": "max\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: folder.url.path) == 700 * Self.mebibyte)
    }

    @Test func noLimitAnywhereIsNone() throws {
        let folder = try machine([
            "/proc/self/mountinfo": Self.unifiedMount,
            "/proc/self/cgroup": "0::/user.slice\n",
            "/sys/fs/cgroup/user.slice/memory.max": "max\n",
            "/sys/fs/cgroup/user.slice/memory.high": "max\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: folder.url.path) == nil)
    }

    @Test func aVersionOneMemoryHierarchyIsRead() throws {
        // A hybrid machine: the unified hierarchy has no memory controller, the v1 one does. The
        // parent's "no limit" is v1's largest page-aligned number.
        let folder = try machine([
            "/proc/self/mountinfo": """
            31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
            32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
            35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
            40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw

            """,
            "/proc/self/cgroup": "12:cpu,cpuacct:/jobs/42\n4:memory:/jobs/42\n0::/jobs/42\n",
            "/sys/fs/cgroup/memory/jobs/42/memory.limit_in_bytes": "536870912\n",
            "/sys/fs/cgroup/memory/jobs/memory.limit_in_bytes": "9223372036854771712\n",
            "/sys/fs/cgroup/cpu,cpuacct/jobs/42/memory.limit_in_bytes": "1\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: folder.url.path) == 512 * Self.mebibyte)
    }

    @Test func aGroupOutsideTheMountIsReadAtTheMountPoint() throws {
        // Docker without a cgroup namespace: /proc/self/cgroup names the host's path of the container's
        // group, and the mount shows that group (its root) at the mount point.
        let folder = try machine([
            "/proc/self/mountinfo":
                "35 31 0:32 /docker/0123abcd /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n",
            "/proc/self/cgroup": "4:memory:/docker/0123abcd\n",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: folder.url.path) == 256 * Self.mebibyte)

        let elsewhere = try machine([
            "/proc/self/mountinfo":
                "35 31 0:32 /docker/0123abcd /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n",
            "/proc/self/cgroup": "4:memory:/system.slice/other\n",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: elsewhere.url.path) == 256 * Self.mebibyte)

        // A process in a group above its cgroup namespace's root: nothing outside the mount is read.
        let above = try machine([
            "/proc/self/mountinfo": Self.unifiedMount,
            "/proc/self/cgroup": "0::/../sibling\n",
            "/sys/fs/cgroup/memory.max": "268435456\n",
            "/sys/fs/sibling/memory.max": "1048576\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: above.url.path) == 256 * Self.mebibyte)
    }

    @Test func escapedMountPointsAndOptionalFieldsAreRead() throws {
        let folder = try machine([
            "/proc/self/mountinfo":
                "29 23 0:26 / /sys/fs/my\\040cgroups rw,relatime shared:4 master:1 - cgroup2 cgroup2 rw,nsdelegate\n",
            "/proc/self/cgroup": "0::/a\n",
            "/sys/fs/my cgroups/a/memory.max": "max\n",
            // The throttling limit counts as well as the hard one.
            "/sys/fs/my cgroups/a/memory.high": "\(300 * Self.mebibyte)\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: folder.url.path) == 300 * Self.mebibyte)
    }

    @Test func unreadableOrMissingFilesGiveNone() throws {
        let garbage = try machine([
            "/proc/self/mountinfo": Self.unifiedMount + "not a mount line\n- - -\n",
            "/proc/self/cgroup": "0::/a\nbroken\n",
            "/sys/fs/cgroup/a/memory.max": "lots\n",
            "/sys/fs/cgroup/a/memory.high": "-5\n",
        ])
        #expect(ControlGroupMemoryLimit.bytes(root: garbage.url.path) == nil)
        let noProc = try machine(["/sys/fs/cgroup/memory.max": "1048576\n"])
        #expect(ControlGroupMemoryLimit.bytes(root: noProc.url.path) == nil)
    }

    @Test(arguments: [
        // usable memory -> per-tier budget
        (24 * 1024, 512),  // a sixteenth, 1.5 GiB, clamped to 512 MiB
        (2 * 1024, 128),  // a sixteenth
        (512, 64),  // a sixteenth would be 32 MiB: the floor
        (256, 32),  // the floor would be half the memory in two tiers: an eighth
    ])
    func theBudgetScalesWithTheMemoryTheProcessMayUse(mebibytes: Int, expected: Int) {
        let budget = ImageStore.recommendedMemoryByteLimit(usableMemory: UInt64(mebibytes) * Self.mebibyte)
        #if os(iOS) || os(tvOS) || os(visionOS) || os(watchOS)
        #expect(budget <= 192 << 20)
        #else
        #expect(budget == expected << 20)
        #endif
    }
}
