import AsyncImageCache
import Foundation

/// Counts decodes and the CPU time the decoding threads spend in them.
final class DecodeMeter: @unchecked Sendable {
    // Every stored property is only touched while holding `lock`.
    private let lock = NSLock()
    private var started = 0
    private var finished = 0
    private var cpuSeconds = 0.0

    var decodesStarted: Int { lock.withLock { started } }
    var decodesInFlight: Int { lock.withLock { started - finished } }
    var decodeCPUSeconds: Double { lock.withLock { cpuSeconds } }

    /// Runs `decode`, counting it and adding its thread CPU time (CLOCK_THREAD_CPUTIME_ID).
    func measure<T, E: Error>(_ decode: () throws(E) -> T) throws(E) -> T {
        lock.withLock { started += 1 }
        let start = Self.threadCPUSeconds()
        defer {
            let spent = Self.threadCPUSeconds() - start
            lock.withLock {
                finished += 1
                cpuSeconds += spent
            }
        }
        return try decode()
    }

    private static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// The store's real decoder, timed: what the store decodes, at the size it asks for.
struct TimedDecoder: ImageDecoding {
    let meter: DecodeMeter
    let base: any ImageDecoding = ImageDecoders.Default()

    func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
        try meter.measure { () throws(ImageDecodingError) -> Bitmap in try base.decode(data, context: context) }
    }
}

/// One row's image on screen, as the frame loop sees it.
@MainActor
protocol ScrollRowImage: AnyObject, Sendable {
    var hasImage: Bool { get }
    func disappear()
}

/// A row drawn through the library's own view logic: a ``CachedImageModel`` per appearance, as
/// SwiftUI's lazy stacks make a fresh view state for a row that comes back on screen.
@MainActor
final class ModelRowImage: ScrollRowImage {
    private let model: CachedImageModel
    private var hydration: Task<Void, Never>?

    init(row: ScrollLayout.Row, store: ImageStore) {
        model = CachedImageModel(url: row.file, displayScale: ScrollLayout.scale, layoutSize: row.frame, store: store)
        if model.image == nil {
            hydration = Task { [model] in await model.load() }
        }
    }

    var hasImage: Bool { model.image != nil }

    func disappear() {
        hydration?.cancel()
        model.disappear()
    }
}

/// The loader of seed 002, on local files: a dictionary cache limited by count, and on a miss a
/// full decode of the file, whatever size the row draws it at. No coalescing: two rows showing one
/// file decode it twice. Like a SwiftUI `.task` whose work cannot be interrupted, a load that
/// started still finishes and fills the cache after its row has gone.
@MainActor
final class NaiveRowImage: ScrollRowImage {
    private(set) var image: Bitmap?
    private var hydration: Task<Void, Never>?

    init(row: ScrollLayout.Row, cache: NaiveCache, meter: DecodeMeter) {
        let key = row.file.path
        if let hit = cache.value(forKey: key) {
            image = hit
            return
        }
        hydration = Task { [weak self] in
            // Off the main actor, as URLSession would fetch; kinder to the naive loader than the
            // seed, whose UIImage decodes lazily on the main thread at first draw.
            let decoded = await Task.detached { Self.decodeFullSize(row.file, meter: meter) }.value
            guard let decoded else { return }
            cache.insert(decoded, forKey: key)
            self?.image = decoded
        }
    }

    var hasImage: Bool { image != nil }

    func disappear() {
        hydration?.cancel()
    }

    nonisolated static func decodeFullSize(_ file: URL, meter: DecodeMeter) -> Bitmap? {
        guard let data = try? Data(contentsOf: file), let header = try? ImageHeader.parse(data) else { return nil }
        let decoder = ImageDecoders.Default()
        return try? meter.measure { () throws(ImageDecodingError) -> Bitmap in
            try decoder.decode(data, context: ImageDecodingContext(header: header))
        }
    }
}

/// The seed's cache: at most `countLimit` images, least recently used out first, whatever their size.
@MainActor
final class NaiveCache {
    private let countLimit: Int
    private var images: [String: Bitmap] = [:]
    private var order: [String] = []

    init(countLimit: Int = 100) {
        self.countLimit = countLimit
    }

    func value(forKey key: String) -> Bitmap? {
        guard let image = images[key] else { return nil }
        touch(key)
        return image
    }

    func insert(_ image: Bitmap, forKey key: String) {
        images[key] = image
        touch(key)
        while order.count > countLimit { images[order.removeFirst()] = nil }
    }

    private func touch(_ key: String) {
        order.removeAll { $0 == key }
        order.append(key)
    }
}
