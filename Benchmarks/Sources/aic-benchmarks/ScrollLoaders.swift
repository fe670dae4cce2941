import AsyncImageCache
import Foundation

/// Counts the naive loader's decodes, so the run can wait for those still going.
final class DecodeMeter: @unchecked Sendable {
    // Every stored property is only touched while holding `lock`.
    private let lock = NSLock()
    private var started = 0
    private var finished = 0

    var decodesStarted: Int { lock.withLock { started } }
    var decodesInFlight: Int { lock.withLock { started - finished } }

    func measure<T, E: Error>(_ decode: () throws(E) -> T) throws(E) -> T {
        lock.withLock { started += 1 }
        defer { lock.withLock { finished += 1 } }
        return try decode()
    }
}

/// When each URL's latest decode started, from the store's stage observer.
final class DecodeStarts: @unchecked Sendable {
    // Every stored property is only touched while holding `lock`.
    private let lock = NSLock()
    private var starts: [URL: ContinuousClock.Instant] = [:]

    func record(_ url: URL) {
        let now = ContinuousClock.now
        lock.withLock { starts[url] = now }
    }

    func latest(for url: URL) -> ContinuousClock.Instant? { lock.withLock { starts[url] } }
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
        assert(model.request == Self.request(for: row))
        if model.image == nil {
            hydration = Task { [model] in await model.load() }
        }
    }

    var hasImage: Bool { model.image != nil }

    func disappear() {
        hydration?.cancel()
        model.disappear()
    }

    /// The request the row's model makes, for prefetching.
    nonisolated static func request(for row: ScrollLayout.Row) -> ImageRequest? {
        CachedImageModel.request(url: row.file, layoutSize: row.frame, displayScale: ScrollLayout.scale)
    }
}

/// Prefetching as a list does it (seed 001): while the list moves, the rows of the next screenful
/// in the scroll direction start prefetching, with the requests the rows will make; rows more than
/// a screenful off screen stop.
@MainActor
final class ScrollPrefetcher {
    private let layout: ScrollLayout
    private let store: ImageStore
    private var prefetching: [Int: ImageRequest] = [:]

    init(layout: ScrollLayout, store: ImageStore) {
        self.layout = layout
        self.store = store
    }

    func update(offset: CGFloat, velocity: CGFloat) {
        let screen = ScrollLayout.screenHeight
        if velocity != 0 {
            let visible = layout.visibleRows(at: offset)
            let next = layout.visibleRows(at: max(0, velocity > 0 ? offset + screen : offset - screen))
            var started: [ImageRequest] = []
            for index in next where !visible.contains(index) && prefetching[index] == nil {
                guard let request = ModelRowImage.request(for: layout.rows[index]) else { continue }
                prefetching[index] = request
                started.append(request)
            }
            if !started.isEmpty { store.startPrefetching(started) }
        }
        let near = (offset - 2 * screen)...(offset + 2 * screen)
        let far = prefetching.filter { !near.contains(layout.tops[$0.key]) }
        guard !far.isEmpty else { return }
        for index in far.keys { prefetching[index] = nil }
        store.stopPrefetching(Array(far.values))
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
