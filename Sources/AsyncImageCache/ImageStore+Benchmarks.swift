import Foundation

/// Single steps of the size lookup, for the benchmark package only (`@_spi(Benchmarks) import`).
extension ImageStore {
    /// The size from the cached file's extended attribute, skipping memory and memo.
    @_spi(Benchmarks) public func benchmarkSizeFromAttribute(for url: URL) -> PixelSize? {
        sizeFromAttribute(for: url)
    }

    /// The size from the cached file's header, skipping memory, memo and attribute.
    @_spi(Benchmarks) public func benchmarkSizeFromHeader(for url: URL) -> PixelSize? {
        sizeFromHeader(for: url)?.size
    }

    /// The path of the disk-tier file for `url`, whether or not it exists.
    @_spi(Benchmarks) public func benchmarkDiskFilePath(for url: URL) -> String {
        disk.filePath(for: url)
    }
}

extension ImageStore {
    /// Writes `data` into the disk tier for `url` as a completed remote load would, with its size
    /// attribute; for benchmarks that need a warm disk without a server.
    @_spi(Benchmarks) public func benchmarkStoreOriginal(_ data: Data, for url: URL) throws {
        let header = try ImageHeader.parse(data)
        try disk.store(data, pixelSize: header.displaySize, for: url)
    }
}
