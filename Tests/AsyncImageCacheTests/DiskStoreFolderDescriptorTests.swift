#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

/// Size lookups name their file relative to the folder, held open (`getxattrat`, Linux 6.13), so the
/// kernel resolves one path component; the folder at the path is looked at again once an interval, and
/// a kernel without the call reads by path.
@Suite struct DiskStoreFolderDescriptorTests {
    let url = URL(string: "https://images.example.com/folder/photo.jpg")!
    let bytes = Data((0..<600).map { UInt8($0 % 253) })

    /// Whether this kernel has `getxattrat`: Linux 6.13 or later.
    static let kernelHasGetxattrat: Bool = {
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        return numbers.count == 2 && (numbers[0], numbers[1]) >= (6, 13)
    }()

    /// Moves the store's folder aside and puts an empty one at its path.
    private func replaceFolder(_ folder: URL, movingItTo aside: URL) throws {
        try FileManager.default.moveItem(at: folder, to: aside)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    @Test func aLookupReadsThroughTheFolderItOpened() throws {
        let root = TemporaryDirectory("folder-descriptor")
        let folder = root.url.appendingPathComponent("store")
        let disk = DiskStore(directory: folder, byteLimit: 1 << 20, folderRecheckInterval: 3600)
        try disk.store(bytes, pixelSize: PixelSize(width: 4, height: 3), for: url)
        #expect(disk.pixelSize(for: url) == PixelSize(width: 4, height: 3))
        // By path there is no file now; through the folder opened before, there still is, until the
        // interval passes. Only a lookup through that folder answers.
        try replaceFolder(folder, movingItTo: root.url.appendingPathComponent("aside"))
        #expect(!FileManager.default.fileExists(atPath: disk.filePath(for: url)))
        let descriptor = try #require(disk.folderDescriptor)
        if Self.kernelHasGetxattrat {
            #expect(disk.pixelSize(for: url) == PixelSize(width: 4, height: 3))
            #expect(!descriptor.isUnsupported)
        } else {
            #expect(disk.pixelSize(for: url) == nil)
            #expect(descriptor.isUnsupported)
        }
    }

    @Test func aFolderReplacedAtThePathIsFollowedOnceTheIntervalPasses() throws {
        let root = TemporaryDirectory("folder-descriptor")
        let folder = root.url.appendingPathComponent("store")
        let disk = DiskStore(directory: folder, byteLimit: 1 << 20, folderRecheckInterval: 0)
        try disk.store(bytes, pixelSize: PixelSize(width: 4, height: 3), for: url)
        #expect(disk.pixelSize(for: url) == PixelSize(width: 4, height: 3))
        let first = disk.folderDescriptor?.heldDescriptor
        #expect(first != nil || !Self.kernelHasGetxattrat)

        // Moved aside with its file: the path's new folder has none.
        try replaceFolder(folder, movingItTo: root.url.appendingPathComponent("aside"))
        #expect(disk.pixelSize(for: url) == nil)
        // Another writer (a second store, as another process would) puts a different image there.
        let other = DiskStore(directory: folder, byteLimit: 1 << 20)
        try other.store(bytes, pixelSize: PixelSize(width: 8, height: 5), for: url)
        #expect(disk.pixelSize(for: url) == PixelSize(width: 8, height: 5))

        // Removed: no folder, no size, no error; the first write makes the folder again.
        try FileManager.default.removeItem(at: folder)
        #expect(disk.pixelSize(for: url) == nil)
        try disk.store(bytes, pixelSize: PixelSize(width: 2, height: 9), for: url)
        #expect(disk.pixelSize(for: url) == PixelSize(width: 2, height: 9))
        if Self.kernelHasGetxattrat {
            let last = try #require(disk.folderDescriptor?.heldDescriptor)
            #expect(Self.target(ofDescriptor: last) == folder.path)
        }
    }

    @Test func theHeldFolderIsClosedWithItsStoreAndWhenReplaced() throws {
        let root = TemporaryDirectory("folder-descriptor")
        let folder = root.url.appendingPathComponent("store")
        let aside = root.url.appendingPathComponent("aside")
        var disk: DiskStore? = DiskStore(directory: folder, byteLimit: 1 << 20, folderRecheckInterval: 0)
        try disk?.store(bytes, pixelSize: PixelSize(width: 4, height: 3), for: url)
        _ = disk?.pixelSize(for: url)
        guard Self.kernelHasGetxattrat else {
            // Found missing at the first lookup, which let the folder go.
            #expect(disk?.folderDescriptor?.isUnsupported == true)
            #expect(disk?.folderDescriptor?.heldDescriptor == nil)
            return
        }
        let first = try #require(disk?.folderDescriptor?.heldDescriptor)
        #expect(Self.target(ofDescriptor: first) == folder.path)
        try replaceFolder(folder, movingItTo: aside)
        _ = disk?.pixelSize(for: url)
        let second = try #require(disk?.folderDescriptor?.heldDescriptor)
        #expect(Self.target(ofDescriptor: second) == folder.path)
        // The first descriptor went with the folder it named: the number, if reused since by another test
        // running alongside, names something else.
        #expect(Self.target(ofDescriptor: first) != aside.path)
        disk = nil
        #expect(Self.target(ofDescriptor: second) != folder.path)
    }

    /// Lookups on four threads while the folder is replaced again and again under them: each answers
    /// a size that one of the folders held, or none, and no descriptor is closed under a lookup.
    @Test func lookupsRacingReplacementsOfTheFolderAnswerFromSomeFolder() throws {
        let root = TemporaryDirectory("folder-descriptor")
        let folder = root.url.appendingPathComponent("store")
        let disk = DiskStore(directory: folder, byteLimit: 1 << 20, folderRecheckInterval: 0)
        try disk.store(bytes, pixelSize: PixelSize(width: 1, height: 1), for: url)
        let answers = LockedBox(Set<PixelSize?>())
        let group = DispatchGroup()
        let stop = LockedBox(false)
        for _ in 0..<4 {
            DispatchQueue.global().async(group: group) {
                var seen = Set<PixelSize?>()
                while !stop.withLock({ $0 }) { seen.insert(disk.pixelSize(for: url)) }
                answers.withLock { $0.formUnion(seen) }
            }
        }
        for round in 2...21 {
            try replaceFolder(folder, movingItTo: root.url.appendingPathComponent("aside-\(round)"))
            try disk.store(bytes, pixelSize: PixelSize(width: round, height: round), for: url)
            usleep(2000)
        }
        stop.withLock { $0 = true }
        group.wait()
        let written = Set((1...21).map { Optional(PixelSize(width: $0, height: $0)) })
        #expect(answers.withLock { $0 }.subtracting(written).subtracting([nil]).isEmpty)
        #expect(disk.pixelSize(for: url) == PixelSize(width: 21, height: 21))
    }

    /// ENOSYS (an older kernel), EPERM (a seccomp filter that does not know the call): asked once,
    /// then every lookup reads by path. Any other failure (EIO) leaves only that lookup to the path.
    @Test(arguments: [(ENOSYS, true), (EPERM, true), (EIO, false)])
    func aFailedCallLeavesTheLookupToThePath(error: Int32, meansNoCall: Bool) throws {
        let folder = TemporaryDirectory("folder-descriptor")
        let calls = LockedBox(0)
        let descriptor = FolderDescriptor(path: folder.url.path + "/") { _, _, _, _ in
            calls.withLock { $0 += 1 }
            return (-1, error)
        }
        var buffer = UInt64(0)
        for _ in 0..<3 {
            let read = withUnsafeMutableBytes(of: &buffer) { buffer in
                descriptor.readAttribute(named: "user.test", ofFile: "photo", into: buffer)
            }
            #expect(read == .unavailable)
        }
        #expect(calls.withLock { $0 } == (meansNoCall ? 1 : 3))
        #expect(descriptor.isUnsupported == meansNoCall)
    }

    /// The path the open descriptor `descriptor` names, from /proc; `nil` when it is not open.
    private static func target(ofDescriptor descriptor: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)")
    }
}
#endif
