extension ImageStore {
    /// Counts of what each tier did since the store was made (or since ``resetStatistics()``).
    public struct Statistics: Sendable, Equatable {
        /// Loads answered by a ready-to-draw variant in memory.
        public var variantHits = 0
        /// Loads whose bytes came from the memory tier of originals.
        public var originalMemoryHits = 0
        /// Loads whose bytes came from the disk tier.
        public var diskHits = 0
        /// Fetches from the source (network, file or `data:` URL) that gave bytes; one that failed (a 404, a
        /// timeout, a missing file) counts in ``failures`` instead, once for each load it failed.
        public var sourceFetches = 0
        /// Bytes received from sources.
        public var bytesFetched = 0
        /// Decodes started: those of loads, and the check decode of a changed image a revalidation found.
        public var decodes = 0
        /// Loads that failed (cancellations excluded), prefetches among them: each load that waited for a
        /// failed run counts, so three loads of one URL that share a failed download count three.
        public var failures = 0
        /// Background revalidations of stale remote entries.
        public var revalidations = 0
        /// Revalidations that found the stored bytes current: the server answered `304 Not Modified`,
        /// or sent the same bytes again.
        public var notModified = 0
        /// Size lookups answered from memory (originals or the size memo).
        public var sizesFromMemory = 0
        /// Size lookups answered by the extended attribute on the cached file.
        public var sizesFromAttribute = 0
        /// Size lookups answered by parsing the header (and repairing the attribute).
        public var sizesFromHeader = 0

        /// Creates zeroed statistics.
        public init() {}
    }

    /// A snapshot of the counters.
    public var statistics: Statistics { counters.withLock { $0 } }

    /// Sets every counter back to zero.
    public func resetStatistics() {
        counters.withLock { $0 = Statistics() }
    }

    func count(_ update: (inout Statistics) -> Void) {
        counters.withLock(update)
    }
}
