import AsyncImageCache
import Foundation

/// One pass of the demo: every sample URL through one store, in order, recording for each image
/// whether its size was known before its pixels and which tier its pixels came from.
///
/// A pass is `Codable` because the relaunch pass runs in a fresh `aic` process, which sends its
/// pass back to the demo as one JSON line on stdout.
struct DemoPass: Codable {
    /// What happened to one image.
    struct Row: Codable {
        /// The last path component of the URL, e.g. `photo.jpg`.
        let name: String
        /// `cachedPixelSize(for:)` before the load, e.g. `4000x3000`; `nil` when it had no answer.
        let sizeBefore: String?
        /// Which step answered the size lookup: `memory`, `xattr` or `header`; `-` when none did.
        let sizeFrom: String
        /// Where the load found the image: `memory`, `memory original`, `disk` or `http`.
        let imageFrom: String
        /// The size of the prepared thumbnail.
        let thumbnail: String
    }

    /// `1 cold`, `2 warm`, `3 relaunch`.
    let label: String
    /// The process that ran the pass.
    let processID: Int32
    let rows: [Row]
    /// Decodes the store started during the pass.
    let decodes: Int
    /// Bytes the store fetched from sources during the pass.
    let bytesFetched: Int
    let milliseconds: Double

    /// Loads every URL through `store` at the demo's width and radius; returns the pass and the
    /// thumbnails in the order of `urls`.
    static func run(
        _ label: String, store: ImageStore, urls: [URL], width: Int, radius: Int
    ) async throws -> (DemoPass, [Bitmap]) {
        store.resetStatistics()
        let clock = ContinuousClock()
        let start = clock.now
        var rows: [Row] = []
        var thumbnails: [Bitmap] = []
        for url in urls {
            let before = store.statistics
            let size = store.cachedPixelSize(for: url)
            let afterLookup = store.statistics
            let image = try await store.image(
                for: ImageRequest(url: url, targetWidth: CGFloat(width), cornerRadius: CGFloat(radius)))
            let afterLoad = store.statistics
            rows.append(
                Row(
                    name: url.lastPathComponent,
                    sizeBefore: size.map { PixelSize(width: Int($0.width), height: Int($0.height)).description },
                    sizeFrom: sizeStep(from: before, to: afterLookup),
                    imageFrom: tier(from: afterLookup, to: afterLoad),
                    thumbnail: image.pixelSize.description))
            thumbnails.append(image)
        }
        let elapsed = clock.now - start
        let statistics = store.statistics
        let pass = DemoPass(
            label: label, processID: getpid(), rows: rows, decodes: statistics.decodes,
            bytesFetched: statistics.bytesFetched,
            milliseconds: Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
        return (pass, thumbnails)
    }

    /// Which step of `cachedPixelSize(for:)` answered, from the counters around one lookup.
    private static func sizeStep(from before: ImageStore.Statistics, to after: ImageStore.Statistics) -> String {
        if after.sizesFromMemory > before.sizesFromMemory { return "memory" }
        if after.sizesFromAttribute > before.sizesFromAttribute { return "xattr" }
        if after.sizesFromHeader > before.sizesFromHeader { return "header" }
        return "-"
    }

    /// Which tier served one load, from the counters around it.
    private static func tier(from before: ImageStore.Statistics, to after: ImageStore.Statistics) -> String {
        if after.variantHits > before.variantHits { return "memory" }
        if after.originalMemoryHits > before.originalMemoryHits { return "memory original" }
        if after.diskHits > before.diskHits { return "disk" }
        if after.sourceFetches > before.sourceFetches { return "http" }
        return "?"
    }
}

extension DemoPass {
    /// The pass as the one JSON line a relaunched process prints.
    func jsonLine() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    /// The pass in the last line of a relaunched process's output.
    init(jsonLine output: String) throws {
        guard let line = output.split(separator: "\n").last else {
            throw CommandFailure("the relaunched aic printed nothing")
        }
        self = try JSONDecoder().decode(DemoPass.self, from: Data(line.utf8))
    }
}
