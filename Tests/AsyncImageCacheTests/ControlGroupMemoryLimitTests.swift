import Foundation
import Testing

@testable import AsyncImageCache

/// The memory limit of the process's control groups, read from a copy of `/proc/self` and the cgroup
/// file systems laid out in a temporary folder as each kind of Linux machine has them.
@Suite struct ControlGroupMemoryLimitTests {
    private static let mebibyte: UInt64 = 1 << 20

    /// The files of a machine's `/proc/self` and cgroup file systems (path from the root: contents),
    /// and the limit they set.
    struct Machine: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var files: [String: String]
        var limitMebibytes: UInt64?
    }

    private static let unifiedMount =
        "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n"
    private static let dockerMemoryMount =
        "35 31 0:32 /docker/0123abcd /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n"

    static let machines: [Machine] = [
        Machine(
            testDescription: "a container with a cgroup namespace: its own limit, at the mount point",
            files: [
                "/proc/self/mountinfo": "22 1 0:21 / / rw - overlay overlay rw\n" + unifiedMount,
                "/proc/self/cgroup": "0::/\n",
                "/sys/fs/cgroup/memory.max": "1073741824\n",
                "/sys/fs/cgroup/memory.high": "max\n",
            ],
            limitMebibytes: 1024),
        Machine(
            testDescription: "a systemd unit in a slice whose limit is lower than the unit's own",
            files: [
                "/proc/self/mountinfo": unifiedMount,
                "/proc/self/cgroup": "0::/app.slice/worker.service\n",
                "/sys/fs/cgroup/app.slice/worker.service/memory.max": "max\n",
                "/sys/fs/cgroup/app.slice/worker.service/memory.high": "\(900 * mebibyte)\n",
                "/sys/fs/cgroup/app.slice/memory.max": "\(700 * mebibyte)\n",
                "/sys/fs/cgroup/app.slice/memory.high": "max\n",
                "/sys/fs/cgroup/memory.max": "max\n",
            ],
            limitMebibytes: 700),
        Machine(
            testDescription: "no limit anywhere",
            files: [
                "/proc/self/mountinfo": unifiedMount,
                "/proc/self/cgroup": "0::/user.slice\n",
                "/sys/fs/cgroup/user.slice/memory.max": "max\n",
                "/sys/fs/cgroup/user.slice/memory.high": "max\n",
            ],
            limitMebibytes: nil),
        Machine(
            // The unified hierarchy has no memory controller here; the parent's "no limit" is v1's
            // largest page-aligned number; a limit file in another controller's hierarchy is not read.
            testDescription: "a hybrid machine: the v1 memory hierarchy",
            files: [
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
            ],
            limitMebibytes: 512),
        Machine(
            testDescription: "a container without a cgroup namespace: the mount shows its group at the mount point",
            files: [
                "/proc/self/mountinfo": dockerMemoryMount,
                "/proc/self/cgroup": "4:memory:/docker/0123abcd\n",
                "/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n",
            ],
            limitMebibytes: 256),
        Machine(
            testDescription: "another group's bind mount: not the process's limit",
            files: [
                "/proc/self/mountinfo": unifiedMount
                    + "301 23 0:26 /system.slice/db.service /mnt/db-cgroup rw,relatime - cgroup2 cgroup2 rw\n",
                "/proc/self/cgroup": "0::/user.slice/session-2.scope\n",
                "/sys/fs/cgroup/user.slice/memory.max": "\(2048 * mebibyte)\n",
                "/mnt/db-cgroup/memory.max": "\(64 * mebibyte)\n",
            ],
            limitMebibytes: 2048),
        Machine(
            testDescription: "a mount that shows none of the process's groups",
            files: [
                "/proc/self/mountinfo": dockerMemoryMount,
                "/proc/self/cgroup": "4:memory:/system.slice/other\n",
                "/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n",
            ],
            limitMebibytes: nil),
        Machine(
            testDescription:
                "a group outside the cgroup namespace's root: neither the namespace's limit nor a sibling's",
            files: [
                "/proc/self/mountinfo": unifiedMount,
                "/proc/self/cgroup": "0::/../sibling\n",
                "/sys/fs/cgroup/memory.max": "268435456\n",
                "/sys/fs/sibling/memory.max": "\(128 * mebibyte)\n",
            ],
            limitMebibytes: nil),
        Machine(
            testDescription: "an escaped mount point, optional fields, and a throttling limit below the hard one",
            files: [
                "/proc/self/mountinfo":
                    "29 23 0:26 / /sys/fs/my\\040cgroups rw,relatime shared:4 master:1 - cgroup2 cgroup2 rw\n",
                "/proc/self/cgroup": "0::/a\n",
                "/sys/fs/my cgroups/a/memory.max": "max\n",
                "/sys/fs/my cgroups/a/memory.high": "\(300 * mebibyte)\n",
            ],
            limitMebibytes: 300),
        Machine(
            testDescription: "lines and limits that do not parse",
            files: [
                "/proc/self/mountinfo": unifiedMount + "not a mount line\n- - -\n",
                "/proc/self/cgroup": "0::/a\nbroken\n",
                "/sys/fs/cgroup/a/memory.max": "lots\n",
                "/sys/fs/cgroup/a/memory.high": "-5\n",
                // Below 1 MiB (the kernel takes a memory.high of 0): no budget could come of it.
                "/sys/fs/cgroup/memory.max": "0\n",
                "/sys/fs/cgroup/memory.high": "4096\n",
            ],
            limitMebibytes: nil),
        Machine(
            testDescription: "no /proc",
            files: ["/sys/fs/cgroup/memory.max": "1048576\n"],
            limitMebibytes: nil),
    ]

    @Test(arguments: machines)
    func theLimitIsTheLowestOfTheProcesssGroups(_ machine: Machine) throws {
        let root = TemporaryDirectory("cgroup")
        for (path, contents) in machine.files {
            let url = root.url.appendingPathComponent(String(path.dropFirst()))
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: url)
        }
        #expect(ControlGroupMemoryLimit.bytes(root: root.url.path) == machine.limitMebibytes.map { $0 * Self.mebibyte })
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

    @Test(arguments: [
        // usable memory -> pixels one decode may have, in megapixels
        (24 * 1024, 64),  // a sixteenth would be 1.5 Gpx: the default's 64 Mpx
        (1024, 64),  // exactly the default: a 256 MiB bitmap in 1 GiB
        (512, 32),  // a 128 MiB bitmap
        (256, 16),  // a 64 MiB bitmap
        (8, 1),  // a sixteenth would be half a megapixel: the floor
    ])
    func thePixelBudgetScalesWithTheMemoryTheProcessMayUse(mebibytes: Int, megapixels: Int) {
        let budget = ImageStore.recommendedPixelBudget(usableMemory: UInt64(mebibytes) * Self.mebibyte)
        #expect(budget == megapixels << 20)
    }
}
