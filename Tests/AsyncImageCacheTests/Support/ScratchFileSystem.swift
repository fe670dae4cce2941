import Foundation
import Spawn

@testable import AsyncImageCache

/// A small tmpfs mounted for one test, to produce faults a server cannot: a full disk, a
/// read-only folder. Root ignores permission bits (`chmod 0555` stops nothing), but not a full
/// file system or a read-only mount.
///
/// Mounting needs root (CAP_SYS_ADMIN); ``isAvailable`` says whether this machine allows it, and
/// tests that need it are skipped where it does not.
final class ScratchFileSystem: @unchecked Sendable {
    // Unchecked: `url` is a constant; the mount itself is only changed by the test that owns it.
    let url: URL

    struct MountError: Error, CustomStringConvertible {
        var description: String
        /// Whether `mount` ended with status 32, as when the file system is busy.
        var isBusy = false
    }

    /// Whether `mount -t tmpfs` works here: tried once per test process.
    static var isAvailable: Bool { probe.mounts }

    /// Whether a tmpfs mounted here keeps `user.` extended attributes, as from Linux 6.6 (Debian 12's kernel,
    /// 6.1, refuses them with `EOPNOTSUPP`).
    static var keepsUserAttributes: Bool { probe.keepsUserAttributes }

    /// One tmpfs mounted per test process, and an attribute written on a file in it.
    private static let probe: (mounts: Bool, keepsUserAttributes: Bool) = {
        guard let volume = try? ScratchFileSystem(byteCount: 64 * 1024) else { return (false, false) }
        let file = volume.url.appendingPathComponent("probe").path
        guard FileManager.default.createFile(atPath: file, contents: Data([1])) else { return (true, false) }
        return (true, (try? FileExtendedAttributes().setValue([1], named: "user.aic-probe", atPath: file)) != nil)
    }()

    /// Whether `/dev/shm` is a tmpfs, which takes a sparse file of the largest size there is (ext4 does not),
    /// as on every usual Linux machine; a sandbox or chroot may have none.
    static let sharedMemoryIsTmpfs: Bool = {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
        return mounts.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && fields[1] == "/dev/shm" && fields[2] == "tmpfs"
        }
    }()

    /// Mounts a tmpfs of `byteCount` bytes on a fresh temporary folder.
    init(byteCount: Int) throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("aic-mount-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        do {
            try Self.mount(["-t", "tmpfs", "-o", "size=\(byteCount)", "tmpfs", url.path])
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw error
        }
    }

    deinit {
        try? Self.mount(["-l", url.path], tool: "/bin/umount")
        try? FileManager.default.removeItem(at: url)
    }

    /// Makes the whole file system read-only (or writable again).
    ///
    /// The kernel refuses to make it read-only while anything writes to it, an access time included: a
    /// store's trim listing the folder at that moment made `mount` fail with status 32 (busy) in a whole-suite
    /// run on a loaded machine. Such a refusal passes, so the remount is tried again, for 30 seconds at most: in a
    /// whole-suite CI run (2026-12-07) a write due to end after 200 ms was still open after the second this was.
    func setReadOnly(_ readOnly: Bool) throws {
        var attempts = 0
        while true {
            do {
                return try Self.mount(["-o", readOnly ? "remount,ro" : "remount,rw", url.path])
            } catch let error as MountError where error.isBusy && attempts < 1500 {
                attempts += 1
                usleep(20_000)
            }
        }
    }

    /// Fills the file system with one file until fewer than `bytes` bytes are free.
    func fill(leavingFree bytes: Int) throws {
        let filler = url.appendingPathComponent("filler")
        guard FileManager.default.createFile(atPath: filler.path, contents: nil) else {
            throw MountError(description: "cannot create \(filler.path)")
        }
        let handle = try FileHandle(forWritingTo: filler)
        defer { try? handle.close() }
        let chunk = Data(repeating: 0xA5, count: 4096)
        while freeByteCount() >= bytes {
            do { try handle.write(contentsOf: chunk) } catch { break }  // full already
        }
    }

    /// The bytes still free on the file system.
    func freeByteCount() -> Int {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Runs `tool` (`mount`, or `umount`) with `arguments`; throws when it fails.
    static func mount(_ arguments: [String], tool: String = "/bin/mount") throws {
        let child = try ChildProcess(
            executable: tool, arguments: arguments, environment: ProcessInfo.processInfo.environment, directory: "/",
            standardOutput: "/dev/null", standardError: "/dev/null")
        let status = child.waitForExit()
        let code = ChildProcess.exitCode(of: status)
        guard code == 0 else {
            throw MountError(
                description: "\(tool) \(arguments.joined(separator: " ")) ended with status \(status)",
                isBusy: code == 32)
        }
    }
}
