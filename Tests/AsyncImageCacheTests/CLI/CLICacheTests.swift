import Foundation
import Testing

@testable import AsyncImageCache

/// `aic cache stats|clear|trim` on stores inside a temporary `XDG_CACHE_HOME`.
@Suite struct CLICacheTests {
    /// A runner whose default store holds `count` remote JPEGs, fetched by `aic thumbnail`, and what their files
    /// count against the budget: the space each takes on disk (``CountedSize``), which `stats`, `clear` and
    /// `trim` report as bytes.
    private func runnerWithCachedImages(_ count: Int) async throws -> (CommandLineRunner, [Int]) {
        let aic = CommandLineRunner()
        let files = try (0..<count).map { ("\($0).jpg", try SampleImages.jpeg(width: 100 + 20 * $0, height: 80)) }
        let server = try await aic.serve(Dictionary(uniqueKeysWithValues: files))
        defer { server.stop() }
        for (name, _) in files {
            let result = try await aic.run(
                "thumbnail", server.url("/images/\(name)").absoluteString, "--width", "10", "--output", "t.png")
            #expect(result.status == 0, "\(result)")
        }
        let stored = try FileManager.default.contentsOfDirectory(at: aic.storeFolder(), includingPropertiesForKeys: nil)
        #expect(stored.count == count)
        // The files hold what was served, byte for byte in size.
        let storedSizes = try stored.map { try Data(contentsOf: $0).count }
        #expect(storedSizes.sorted() == files.map(\.1.count).sorted())
        return (aic, stored.compactMap { CountedSize.ofFile(atPath: $0.path) })
    }

    private func json(_ result: CommandLineRunner.Result) throws -> [String: Any] {
        #expect(result.status == 0, "\(result)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test func statsReportsEntriesBytesTheOldestEntryAndTheFolder() async throws {
        let (aic, byteCounts) = try await runnerWithCachedImages(2)
        let folder = aic.storeFolder()

        let stats = try json(try await aic.run("cache", "stats", "--json"))
        #expect(stats["name"] as? String == "default")
        #expect(stats["folder"] as? String == folder.path)
        #expect(stats["entries"] as? Int == 2)
        #expect(stats["bytes"] as? Int == byteCounts.reduce(0, +))
        let oldest = try #require(stats["oldest"] as? String)
        let oldestDate = try #require(ISO8601DateFormatter().date(from: oldest))
        #expect(abs(oldestDate.timeIntervalSinceNow) < 3600, "written by this test: \(oldest)")

        let text = try await aic.run("cache", "stats")
        #expect(text.status == 0, "\(text)")
        #expect(text.stdout.contains("folder   \(folder.path)\n"))
        #expect(text.stdout.contains("entries  2\n"))
        #expect(text.stdout.contains("bytes    \(byteCounts.reduce(0, +)) ("))
        #expect(text.stdout.contains("oldest   \(oldest) ("))
    }

    @Test func theOldestEntryIsOneOfTheEntriesNotAnotherItemInTheFolder() async throws {
        let (aic, _) = try await runnerWithCachedImages(1)
        // Neither a folder nor a link is an entry: the store never counts, trims or clears them.
        let folder = aic.storeFolder()
        let aged = Date().addingTimeInterval(-10 * 86_400)
        let subfolder = folder.appendingPathComponent("notes")
        try FileManager.default.createDirectory(at: subfolder, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.modificationDate: aged], ofItemAtPath: subfolder.path)
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent("link"), withDestinationURL: subfolder)

        let stats = try json(try await aic.run("cache", "stats", "--json"))
        #expect(stats["entries"] as? Int == 1)
        let oldestText = try #require(stats["oldest"] as? String)
        let oldest = try #require(ISO8601DateFormatter().date(from: oldestText))
        #expect(abs(oldest.timeIntervalSinceNow) < 3600, "the entry was written by this test: \(oldest)")
        let trimmed = try json(try await aic.run("cache", "trim", "--json"))  // 7 days
        #expect(trimmed["removed"] as? Int == 0)
    }

    @Test func clearRemovesEveryEntryAndSaysHowMany() async throws {
        let (aic, byteCounts) = try await runnerWithCachedImages(2)

        let cleared = try json(try await aic.run("cache", "clear", "--json"))
        #expect(cleared["removed"] as? Int == 2)
        #expect(cleared["removedBytes"] as? Int == byteCounts.reduce(0, +))
        #expect(cleared["entries"] as? Int == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: aic.storeFolder().path).isEmpty)

        let stats = try await aic.run("cache", "stats")
        #expect(stats.stdout.contains("entries  0\n") && stats.stdout.contains("oldest   -\n"), "\(stats)")
        let again = try await aic.run("cache", "clear")
        #expect(again.stdout == "cleared 0 entries (0 B) from \"default\"; 0 left (0 B)\n")
    }

    @Test func trimRemovesOnlyTheEntriesUnusedForLongerThanTheMaxAge() async throws {
        let (aic, byteCounts) = try await runnerWithCachedImages(3)
        // Age two of the three entries by ten days: the store reads last use from the modification date.
        let files = try FileManager.default.contentsOfDirectory(at: aic.storeFolder(), includingPropertiesForKeys: nil)
        // Whole seconds, so the printed date (to the second) is exactly this one.
        let aged = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 10 * 86_400).rounded(.down))
        for file in files.prefix(2) {
            try FileManager.default.setAttributes([.modificationDate: aged], ofItemAtPath: file.path)
        }
        let agedBytes = try files.prefix(2).map { try #require(CountedSize.ofFile(atPath: $0.path)) }.reduce(0, +)

        let sparing = try json(try await aic.run("cache", "trim", "--max-age", "11d", "--json"))
        #expect(sparing["removed"] as? Int == 0)
        let stats = try json(try await aic.run("cache", "stats", "--json"))
        #expect(stats["oldest"] as? String == ISO8601DateFormatter().string(from: aged))

        let trimmed = try json(try await aic.run("cache", "trim", "--json"))  // the default: 7 days
        #expect(trimmed["removed"] as? Int == 2)
        #expect(trimmed["removedBytes"] as? Int == agedBytes)
        #expect(trimmed["entries"] as? Int == 1)
        #expect(trimmed["bytes"] as? Int == byteCounts.reduce(0, +) - agedBytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: aic.storeFolder().path).count == 1)
    }

    @Test func lookingAtAStoreThatWasNeverWrittenLeavesNoFolderBehind() async throws {
        let aic = CommandLineRunner()
        for action in ["stats", "trim", "clear"] {
            let result = try json(try await aic.run("cache", action, "--name", "never-used", "--json"))
            #expect(result["entries"] as? Int == 0, "\(action)")
        }
        #expect(!FileManager.default.fileExists(atPath: aic.storeFolder("never-used").path))
        // The first image stored makes the folder.
        let server = try await aic.serve(["0.jpg": try SampleImages.jpeg(width: 64, height: 64)])
        defer { server.stop() }
        let root = aic.cacheHome.url.appendingPathComponent("AsyncImageCache")
        let store = try ImageStore.makeForTesting(root: root, name: "never-used")
        #expect(!FileManager.default.fileExists(atPath: store.directory.path))
        _ = try await store.image(for: ImageRequest(url: server.url("/images/0.jpg")))
        store.waitForDiskMaintenance()
        #expect(store.diskUsage().fileCount == 1)
    }

    @Test func nameSelectsAnotherStoreUnderTheSameCacheFolder() async throws {
        let aic = CommandLineRunner()
        let server = try await aic.serve(["0.jpg": try SampleImages.jpeg(width: 64, height: 64)])
        defer { server.stop() }
        // The library fills a store named "avatars" where the child process will look for it.
        let root = aic.cacheHome.url.appendingPathComponent("AsyncImageCache")
        let store = try ImageStore.makeForTesting(root: root, name: "avatars")
        _ = try await store.image(for: ImageRequest(url: server.url("/images/0.jpg")))
        store.waitForDiskMaintenance()

        let avatars = try json(try await aic.run("cache", "stats", "--name", "avatars", "--json"))
        #expect(avatars["entries"] as? Int == 1)
        #expect(avatars["folder"] as? String == aic.storeFolder("avatars").path)
        #expect(try json(try await aic.run("cache", "stats", "--json"))["entries"] as? Int == 0)

        let cleared = try await aic.run("cache", "clear", "--name=avatars")
        #expect(cleared.stdout.hasPrefix("cleared 1 entry ("), "\(cleared)")
        #expect(store.diskUsage().fileCount == 0)
    }

    /// A max age longer than any file has existed trims nothing; one that overflows to infinity
    /// once its unit is applied is a usage error. Neither may crash the summary line.
    @Test func aHugeMaxAgeTrimsNothingAndAnInfiniteOneIsAUsageError() async throws {
        let aic = CommandLineRunner()
        let huge = try await aic.run("cache", "trim", "--max-age", "1e300")
        #expect(huge.status == 0, "\(huge)")
        #expect(huge.stdout.hasPrefix("trimmed 0 entries"), "\(huge)")

        let infinite = try await aic.run("cache", "trim", "--max-age", "1e306d")
        #expect(infinite.status == 2, "\(infinite)")
    }

    /// `-0` is a number of seconds that is not negative, and the age it gives is 0: the summary said
    /// "not used for -0 seconds".
    @Test func aMaxAgeOfMinusZeroIsZeroSeconds() async throws {
        let aic = CommandLineRunner()
        for text in ["-0", "-0d", "-0.0"] {
            let trimmed = try await aic.run("cache", "trim", "--max-age", text)
            #expect(trimmed.status == 0, "\(trimmed)")
            #expect(trimmed.stdout.contains("not used for 0 seconds from"), "\(text): \(trimmed)")
        }
        let negative = try await aic.run("cache", "trim", "--max-age", "-1")
        #expect(negative.status == 2, "\(negative)")
    }

    /// On Linux, making any `URLSessionConfiguration` creates `org.swift.foundation.URLCache` in the cache
    /// folder: runs that download nothing (cache commands, local files) leave only the store's own folder.
    @Test func aToolRunThatDownloadsNothingLeavesNoURLCacheFolder() async throws {
        let aic = CommandLineRunner()
        let urlCacheFolder = aic.cacheHome.url.appendingPathComponent("org.swift.foundation.URLCache")
        let jpeg = try SampleImages.jpeg(width: 40, height: 30)
        try jpeg.write(to: aic.file("local.jpg"))
        for arguments in [
            ["cache", "stats"], ["info", "local.jpg"],
            ["thumbnail", "local.jpg", "--width", "10", "--output", "t.png"],
            ["cache", "trim"], ["cache", "clear"],
        ] {
            let result = try await aic.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result)")
            #expect(!FileManager.default.fileExists(atPath: urlCacheFolder.path), "after \(arguments)")
        }
        // A download makes the session, and with it the folder: what the runs above were spared.
        let server = try await aic.serve(["remote.jpg": jpeg])
        defer { server.stop() }
        let result = try await aic.run(
            "thumbnail", server.url("/images/remote.jpg").absoluteString, "--width", "10", "--output", "t.png")
        #expect(result.status == 0, "\(result)")
        #expect(FileManager.default.fileExists(atPath: urlCacheFolder.path))
    }

    /// Without an absolute `XDG_CACHE_HOME` (unset, empty or relative, which the XDG spec says to
    /// ignore) the cache is in `$HOME/.cache`, as the documentation says: the home directory of the
    /// account database is only for a `HOME` that is unset or not absolute.
    @Test func theCacheFolderFollowsHOMEWhenXDGCacheHomeIsNotAnAbsolutePath() async throws {
        let aic = CommandLineRunner()
        let home = aic.workspace.url.appendingPathComponent("home").path
        for xdg in [nil, "", "relative/cache"] as [String?] {
            let stats = try json(
                try await aic.run(["cache", "stats", "--json"], environment: ["HOME": home, "XDG_CACHE_HOME": xdg]))
            #expect(
                stats["folder"] as? String == home + "/.cache/AsyncImageCache/default",
                "XDG_CACHE_HOME=\(xdg ?? "unset")")
        }
        for unusable in [nil, "", "relative/home"] as [String?] {
            let stats = try json(
                try await aic.run(
                    ["cache", "stats", "--json"], environment: ["HOME": unusable, "XDG_CACHE_HOME": nil]))
            let folder = try #require(stats["folder"] as? String)
            #expect(
                folder.hasPrefix("/") && folder.hasSuffix("/.cache/AsyncImageCache/default"),
                "HOME=\(unusable ?? "unset")")
        }
    }

    /// Entries the user may not delete (a read-only file system; a folder without write permission
    /// for other users) fail `clear` and `trim` with the reason and exit status 1: a script must not
    /// take "cleared 0 entries; 1 left" for success.
    @Test(.enabled(if: getuid() != 0 || ScratchFileSystem.isAvailable, "root needs a read-only mount"))
    func clearAndTrimFailWithTheReasonWhenEntriesCannotBeRemoved() async throws {
        let aic = CommandLineRunner()
        // Root ignores permissions: a read-only tmpfs stops it. Anyone else: a folder without write permission.
        let volume = getuid() == 0 ? try ScratchFileSystem(byteCount: 256 * 1024) : nil
        let cacheHome = volume?.url ?? aic.cacheHome.url
        let folder = cacheHome.appendingPathComponent("AsyncImageCache/default", isDirectory: true)
        let disk = DiskStore(directory: folder, byteLimit: 1 << 20)
        try disk.store(
            Data(repeating: 1, count: 1000), pixelSize: PixelSize(width: 1, height: 1),
            for: URL(string: "https://example.com/a.jpg")!)
        // The trim the write schedules lists the folder, which updates its access time: a trim still
        // running when the volume is made read-only can fail the remount (once: exit status 32, busy).
        disk.waitForPendingTrims()
        if let volume {
            try volume.setReadOnly(true)
        } else {
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        }
        defer {
            try? volume?.setReadOnly(false)  // so the tmpfs unmounts cleanly
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        }
        let reason = volume == nil ? "Permission denied" : "Read-only file system"
        for arguments in [["clear"], ["trim", "--max-age", "0"], ["clear", "--json"]] {
            let result = try await aic.run(["cache"] + arguments, environment: ["XDG_CACHE_HOME": cacheHome.path])
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(
                result.stderr == "aic: cannot remove entries from \"default\" in \(folder.path): \(reason)\n",
                "\(arguments): \(result)")
        }
        let stats = try await aic.run(["cache", "stats", "--json"], environment: ["XDG_CACHE_HOME": cacheHome.path])
        #expect(try json(stats)["entries"] as? Int == 1)
    }

    /// A store folder that is there but cannot be listed (a regular file in its place, a link to
    /// itself) fails every action with the reason, rather than showing an empty store.
    @Test func aCacheFolderThatCannotBeListedIsAFailureNotAnEmptyStore() async throws {
        let aic = CommandLineRunner()
        let folder = aic.storeFolder()
        try FileManager.default.createDirectory(
            at: folder.deletingLastPathComponent(), withIntermediateDirectories: true)
        for (make, reason) in [
            ({ try Data([1]).write(to: folder) }, "Not a directory"),
            (
                { try FileManager.default.createSymbolicLink(atPath: folder.path, withDestinationPath: folder.path) },
                "Too many levels of symbolic links"
            ),
        ] as [(() throws -> Void, String)] {
            try make()
            defer { try? FileManager.default.removeItem(at: folder) }
            for action in [["stats"], ["clear"], ["trim"], ["stats", "--json"]] {
                let result = try await aic.run(["cache"] + action)
                #expect(result.status == 1, "\(action): \(result)")
                #expect(result.stdout.isEmpty, "\(action): \(result)")
                #expect(result.stderr == "aic: cannot read the cache folder \(folder.path): \(reason)\n", "\(action)")
            }
        }
    }
}
