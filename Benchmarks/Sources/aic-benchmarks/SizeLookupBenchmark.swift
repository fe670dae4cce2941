@_spi(Benchmarks) import AsyncImageCache
import Foundation

#if canImport(CBenchmarkSupport)
import CBenchmarkSupport
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Seed 000's table on Linux: the natural size of 100 cached ~1024x768 JPEGs by each path, beside
/// the bare system calls each path is built on.
enum SizeLookupBenchmark {
    static func run(rounds: Int) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aic-bench-\(getpid())")
        defer { try? FileManager.default.removeItem(at: root) }
        var configuration = ImageStore.Configuration(name: "bench")
        configuration.rootDirectory = root
        let store = try ImageStore(configuration: configuration)

        print("Making 100 gradient JPEGs of about 1024x768...")
        var urls: [URL] = []
        var files: [(path: String, data: Data)] = []
        for index in 0..<100 {
            let width = 1024 - index % 5
            let height = 768 - index % 3
            var pixels = [UInt8](repeating: 255, count: width * height * 4)
            for y in 0..<height {
                for x in 0..<width {
                    let offset = (y * width + x) * 4
                    pixels[offset] = UInt8((x * 255) / width)
                    pixels[offset + 1] = UInt8((y * 255) / height)
                    pixels[offset + 2] = UInt8((index * 7 + x / 4) & 0xff)
                }
            }
            let data = try ImageEncoders.JPEG(quality: 85).encode(Bitmap(width: width, height: height, pixels: pixels))
            let url = URL(string: "https://images.example.com/gallery/\(index).jpg")!
            try store.benchmarkStoreOriginal(data, for: url)
            urls.append(url)
            files.append((store.benchmarkDiskFilePath(for: url), data))
        }
        let attributeName = "user.asyncimagecache.pixelsize"
        // Every path and floor must answer before it is timed: on a file system without user extended
        // attributes (tmpfs before Linux 6.6) the xattr rows would time failing calls and still pass.
        for (url, file) in zip(urls, files) {
            let expected = try ImageHeader.parse(file.data).displaySize
            var raw = UInt64(0)
            let length = withUnsafeMutableBytes(of: &raw) { getxattr(file.path, attributeName, $0.baseAddress, 8) }
            guard store.benchmarkSizeFromAttribute(for: url) == expected, length == 8,
                store.benchmarkSizeFromHeader(for: url) == expected
            else { throw BenchmarkFailure("no size attribute or header at \(file.path): cannot time those paths") }
        }
        // The cached files by their own `file:` URLs: a local file has no attribute of the store's, so a memo
        // miss takes the header path whole (status, open, read, parse, the memo filled) every time.
        let fileURLs = files.map { URL(fileURLWithPath: $0.path) }
        for (url, file) in zip(fileURLs, files) {
            let expected = try ImageHeader.parse(file.data).displaySize
            guard store.cachedPixelSize(for: url) == CGSize(width: expected.width, height: expected.height) else {
                throw BenchmarkFailure("no size from the header of \(file.path) by its file URL")
            }
        }
        // The call the xattr path makes on Linux 6.13 and later: the file named relative to its folder,
        // held open. Timed beside the floor when this kernel has it.
        let folder = bench_open_directory((files[0].path as NSString).deletingLastPathComponent)
        defer { close(folder) }
        let names = files.map { ($0.path as NSString).lastPathComponent }
        let hasGetxattrat = names.allSatisfy { name in
            var raw = UInt64(0)
            return withUnsafeMutableBytes(of: &raw) {
                bench_lgetxattrat(folder, name, attributeName, $0.baseAddress, 8)
            } == 8
        }
        for url in urls { _ = store.cachedPixelSize(for: url) }  // fills the memo
        store.resetStatistics()
        let decoder = ImageDecoders.Default()
        var contest = Contest()
        for _ in 0..<rounds {
            // The public call on a memo miss, timed whole: 20 passes over `keys`, the memo emptied (and
            // `beforeEachPass` run) before each, untimed; microseconds per lookup.
            func wholePath(_ keys: [URL], beforeEachPass: () -> Void = {}) -> Double {
                (0..<20).reduce(0.0) { total, _ in
                    store.clearMemory()
                    beforeEachPass()
                    return total + perItemMicroseconds(keys) { blackHole(store.cachedPixelSize(for: $0)) } / 20
                }
            }
            // How long the store takes to write back the attributes its last pass over `urls` repaired, per file.
            func writeBackMicroseconds() -> Double {
                let start = ContinuousClock.now
                store.waitForDiskMaintenance()
                return milliseconds(ContinuousClock.now - start) * 1000 / Double(urls.count)
            }
            // The header path timed whole, as the xattr path is below, first: the xattr path's last pass then
            // leaves the memo full for the memo hits.
            let headerWhole = wholePath(fileURLs)
            // A cached image's header path whole, once its attribute is lost (a copy that dropped it): the
            // attribute missed, the header read, the memo filled and the attribute's write-back queued for the
            // store's disk queue. Each pass's write-backs are made (and timed) after it, before the next.
            var writeBack = 0.0
            let repairWhole = wholePath(urls) {
                writeBack += writeBackMicroseconds()
                for file in files { removexattr(file.path, attributeName) }
            }
            writeBack += writeBackMicroseconds()
            // The path cachedPixelSize(for:) takes on a memo miss (after a relaunch): memo and memory
            // misses, the attribute, and the memo filled.
            let xattrPath = wholePath(urls)
            contest.record(
                "memo hit", perItemMicroseconds(urls, passes: 20) { blackHole(store.cachedPixelSize(for: $0)) })
            contest.record("xattr path", xattrPath)
            contest.record(
                "  attribute step alone",
                perItemMicroseconds(urls, passes: 20) { blackHole(store.benchmarkSizeFromAttribute(for: $0)) })
            contest.record(
                "bare getxattr",
                perItemMicroseconds(files, passes: 20) { file in
                    var buffer = (UInt64(0))
                    blackHole(
                        withUnsafeMutableBytes(of: &buffer) { getxattr(file.path, attributeName, $0.baseAddress, 8) })
                })
            if hasGetxattrat {
                contest.record(
                    "  bare getxattrat",
                    perItemMicroseconds(names, passes: 20) { name in
                        var buffer = (UInt64(0))
                        blackHole(
                            withUnsafeMutableBytes(of: &buffer) {
                                bench_lgetxattrat(folder, name, attributeName, $0.baseAddress, 8)
                            })
                    })
            }
            contest.record(
                "header path",
                perItemMicroseconds(urls, passes: 20) { blackHole(store.benchmarkSizeFromHeader(for: $0)) })
            contest.record("  header path, whole", headerWhole)
            contest.record("  header path + repair", repairWhole)
            // The 20 passes' write-backs (none is waiting before the first pass), per file and pass.
            contest.record("  its write-back, queued", writeBack / 20)
            contest.record(
                "bare open+read+close",
                perItemMicroseconds(files, passes: 20) { file in
                    let descriptor = open(file.path, O_RDONLY)
                    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
                    blackHole(read(descriptor, &buffer, buffer.count))
                    close(descriptor)
                })
            contest.record(
                "read file + full decode",
                perItemMicroseconds(files) { file in
                    guard let data = FileManager.default.contents(atPath: file.path),
                        let header = try? ImageHeader.parse(data)
                    else {
                        return
                    }
                    blackHole(try? decoder.decode(data, context: ImageDecodingContext(header: header)))
                })
        }

        // 20 memo hits, 20 attribute reads and 40 whole header paths (file URLs, lost attributes) per file per
        // round; a header fallback where an attribute was expected, or a memo hit, would time the wrong path.
        let counted = store.statistics
        guard counted.sizesFromMemory == rounds * 2000, counted.sizesFromAttribute == rounds * 2000,
            counted.sizesFromHeader == rounds * 4000
        else { throw BenchmarkFailure("size lookups did not take the paths timed: \(counted)") }
        // Every attribute the repairs wrote back is there, so the xattr passes read real ones.
        for file in files {
            var raw = UInt64(0)
            let length = withUnsafeMutableBytes(of: &raw) { getxattr(file.path, attributeName, $0.baseAddress, 8) }
            guard length == 8 else { throw BenchmarkFailure("no size attribute written back at \(file.path)") }
        }
        print("\nNatural size of 100 cached ~1024x768 JPEGs, per file, median of \(rounds) rounds")
        print(column("path", 26) + column("per file (us)", 15) + "per 100 (ms)")
        for name in contest.order {
            let value = contest.median(name)
            print(column(name, 26) + column(format(value), 15) + format(value / 10, digits: 3))
        }
        let xattrRatio = contest.median("xattr path") / contest.median("bare getxattr")
        let headerRatio = contest.median("header path") / contest.median("bare open+read+close")
        let headerWholeRatio = contest.median("  header path, whole") / contest.median("bare open+read+close")
        let repairRatio = contest.median("  header path + repair") / contest.median("bare open+read+close")
        let memoRatio = contest.median("memo hit") / contest.median("xattr path")
        print("\nratio                         measured  goal")
        print(
            column("xattr path / bare getxattr", 30) + column(format(xattrRatio), 10) + "<= 1.5  "
                + verdict(xattrRatio <= 1.5))
        print(
            column("header path / bare read", 30) + column(format(headerRatio), 10) + "<= 2.0  "
                + verdict(headerRatio <= 2.0))
        print(
            column("  header path, whole / read", 30) + column(format(headerWholeRatio), 10) + "<= 2.0  "
                + verdict(headerWholeRatio <= 2.0) + " (a file: URL's lookup, status and memo included)")
        print(
            column("  header + repair / read", 30) + column(format(repairRatio), 10) + "<= 2.0  "
                + verdict(repairRatio <= 2.0)
                + " (a cached image's, its attribute lost: once per file; the write-back goes on the disk queue)")
        print(
            column("memo hit / xattr path", 30) + column(format(memoRatio, digits: 3), 10) + "<  0.1  "
                + verdict(memoRatio < 0.1))
        if hasGetxattrat {
            let ownRatio = contest.median("xattr path") / contest.median("  bare getxattrat")
            print(
                column("  xattr path / getxattrat", 30) + format(ownRatio) + "      (over the call the path makes here)"
            )
        } else {
            print("  (no getxattrat on this kernel, before Linux 6.13: the xattr path reads by path, as bare getxattr)")
        }
    }

    static func verdict(_ met: Bool) -> String { met ? "met" : "NOT MET" }
}
