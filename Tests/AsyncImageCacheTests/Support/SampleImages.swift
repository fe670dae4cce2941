import Foundation
import Testing

@testable import AsyncImageCache

/// Images made by the tests themselves, encoded with the package's real encoders.
enum SampleImages {
    /// A smooth colour gradient with a diagonal stripe, so resizing and orientation errors show.
    static func gradient(width: Int, height: Int, seed: Int = 0) -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 4
                pixels[offset] = UInt8((x * 255) / max(1, width - 1))
                pixels[offset + 1] = UInt8((y * 255) / max(1, height - 1))
                pixels[offset + 2] = UInt8(truncatingIfNeeded: (x + y + seed * 40) & 0xff)
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    static func jpeg(width: Int, height: Int, seed: Int = 0) throws -> Data {
        try ImageEncoders.JPEG(quality: 85).encode(gradient(width: width, height: height, seed: seed))
    }

    static func png(width: Int, height: Int, seed: Int = 0) throws -> Data {
        try ImageEncoders.PNG().encode(gradient(width: width, height: height, seed: seed))
    }

    /// Writes JPEGs of the given sizes as `0.jpg`, `1.jpg`, ... into `directory`.
    @discardableResult
    static func writeJPEGs(_ sizes: [PixelSize], into directory: URL) throws -> [String] {
        try sizes.enumerated().map { index, size in
            let name = "\(index).jpg"
            try jpeg(width: size.width, height: size.height, seed: index).write(
                to: directory.appendingPathComponent(name))
            return name
        }
    }
}

/// A decoder that counts its calls and hands the work to the real one.
final class CountingDecoder: ImageDecoding, @unchecked Sendable {
    // `calls` is only touched while holding `lock`.
    private let lock = NSLock()
    private var calls = 0
    private let base: any ImageDecoding = ImageDecoders.Default()

    var count: Int { lock.withLock { calls } }

    func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
        lock.withLock { calls += 1 }
        return try base.decode(data, context: context)
    }
}

/// A loader that records the outcome of every fetch and hands the work to the real one.
final class RecordingLoader: DataLoading, @unchecked Sendable {
    // `outcomes` and `started` are only touched while holding `lock`.
    private let lock = NSLock()
    private var outcomes: [Result<Int, ImageLoadingError>] = []
    private var started = 0
    private let base: any DataLoading

    init(base: any DataLoading = DataLoader()) {
        self.base = base
    }

    var startedCount: Int { lock.withLock { started } }
    var results: [Result<Int, ImageLoadingError>] { lock.withLock { outcomes } }

    func loadData(for url: URL) async throws(ImageLoadingError) -> Data {
        lock.withLock { started += 1 }
        do {
            let data = try await base.loadData(for: url)
            lock.withLock { outcomes.append(.success(data.count)) }
            return data
        } catch {
            lock.withLock { outcomes.append(.failure(error)) }
            throw error
        }
    }
}

extension ImageStore {
    /// A store in its own temporary root, for tests.
    static func makeForTesting(
        root: URL, name: String = "test", _ adjust: (inout ImageStore.Configuration) -> Void = { _ in }
    ) throws -> ImageStore {
        var configuration = ImageStore.Configuration(name: name)
        configuration.rootDirectory = root
        adjust(&configuration)
        return try ImageStore(configuration: configuration)
    }

    /// The files in the disk tier's folder.
    var diskFileNames: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.sorted() ?? []
    }

    /// Loads `url` expecting it to fail with a network error for `url` that leaves nothing on disk
    /// and no size known; returns the error's description, or `nil` once an issue is recorded.
    func expectNetworkErrorStoringNothing(
        loading url: URL, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> String? {
        let error = await #expect(throws: ImageLoadingError.self, sourceLocation: sourceLocation) {
            try await self.image(for: ImageRequest(url: url, targetWidth: 32))
        }
        #expect(diskFileNames.isEmpty, sourceLocation: sourceLocation)
        #expect(cachedPixelSize(for: url) == nil, sourceLocation: sourceLocation)
        guard case .network(let failed, let description)? = error, failed == url else {
            Issue.record("not a network error for \(url): \(String(describing: error))", sourceLocation: sourceLocation)
            return nil
        }
        return description
    }
}

extension TestHTTPServer {
    /// A server of one 64x48 JPEG, `/images/0.jpg`, written into `folder` (which must outlive it), and
    /// the JPEG's bytes.
    static func servingOneJPEG(in folder: TemporaryDirectory) async throws -> (server: TestHTTPServer, image: Data) {
        try SampleImages.writeJPEGs([PixelSize(width: 64, height: 48)], into: folder.url)
        let server = try await TestHTTPServer(serving: folder.url)
        return (server, try Data(contentsOf: folder.url.appendingPathComponent("0.jpg")))
    }
}
