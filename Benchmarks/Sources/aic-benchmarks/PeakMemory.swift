#if canImport(VipsReference)
import AsyncImageCache
import Foundation
import VipsReference

/// Peak memory growth of one thumbnail, measured in a fresh child process (`aic-benchmarks thumb-once`).
///
/// The child reads the file's bytes, makes one thumbnail of a small warm-up photo (so libraries, thread
/// pools and lazy tables exist), resets the kernel's peak (`5` into `/proc/self/clear_refs`), notes VmRSS,
/// makes the thumbnail and reads VmHWM. Growth = VmHWM - that VmRSS: everything the thumbnail needed
/// beyond the compressed bytes, which both tools get from memory (ours through a loader that hands the
/// store the loaded `Data`, libvips through `vips_thumbnail_buffer`).
enum PeakMemory {
    /// Runs `aic-benchmarks thumb-once TOOL FILE WIDTH WARMUP` and returns its growth in megabytes.
    static func measureInChild(tool: String, file: URL, width: Int, warmUp: URL) throws -> Double {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        let data: Data
        do {
            data = try runCommand([executable, "thumb-once", tool, file.path, String(width), warmUp.path])
        } catch {
            throw BenchmarkFailure("thumb-once \(tool) failed: \(error)")
        }
        let output = String(decoding: data, as: UTF8.self)
        guard let kilobytes = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchmarkFailure("thumb-once \(tool) printed no figure: \(output)")
        }
        return kilobytes / 1024
    }

    /// The child's side: prints the growth in kilobytes.
    static func childMain(_ arguments: [String]) async throws {
        guard arguments.count == 4, let width = Int(arguments[2]) else {
            throw BenchmarkFailure("usage: aic-benchmarks thumb-once ours|vips FILE WIDTH WARMUP_FILE")
        }
        let tool = arguments[0]
        let data = try Data(contentsOf: URL(fileURLWithPath: arguments[1]))
        let warmUp = try Data(contentsOf: URL(fileURLWithPath: arguments[3]))
        if tool == "vips" { guard vips_reference_start() == 0 else { throw BenchmarkFailure("vips_init failed") } }
        try await thumbnail(tool, warmUp, width: width)
        guard (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil else {
            throw BenchmarkFailure("cannot reset the peak RSS (/proc/self/clear_refs)")
        }
        let baseline = status("VmRSS")
        try await thumbnail(tool, data, width: width)
        print(status("VmHWM") - baseline)
    }

    private static func thumbnail(_ tool: String, _ data: Data, width: Int) async throws {
        if tool == "vips" {
            var resultWidth: Int32 = 0
            var resultHeight: Int32 = 0
            let status = data.withUnsafeBytes { bytes in
                vips_reference_thumbnail_buffer(
                    bytes.baseAddress, bytes.count, Int32(width), &resultWidth, &resultHeight)
            }
            guard status == 0 else { throw BenchmarkFailure("libvips: \(ThumbnailBenchmark.lastVipsError())") }
        } else {
            let store = try ImageStore(configuration: ThumbnailBenchmark.configuration(loader: LoadedBytes(data: data)))
            let url = URL(fileURLWithPath: "/loaded-bytes-\(data.count).jpg")
            blackHole(try await store.image(for: ImageRequest(url: url, targetWidth: CGFloat(width))))
        }
    }

    /// A field of /proc/self/status in kilobytes.
    private static func status(_ field: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}

/// Hands the store bytes already in memory, so their size is not part of the growth.
struct LoadedBytes: DataLoading {
    let data: Data

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data { data }
}
#endif
