import Foundation

extension RowResampler {
    /// Resamples a whole image already in memory, split across the cores when it is worth it.
    func resample(source: UnsafeRawPointer, bytesPerRow: Int) -> [UInt8] {
        // Below about a million multiply-adds a pass, handing rows to other threads costs more than it saves.
        let work = targetSize.width * sourceSize.height * max(1, sourceSize.width / max(1, targetSize.width))
        let lanes = work < 1 << 20 ? 1 : min(4, ProcessInfo.processInfo.activeProcessorCount)
        return withBuffers(source: source, bytesPerRow: bytesPerRow) { buffers in
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                filter(Self.share(lane, of: lanes, sourceSize.height), buffers)
            }
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                sum(Self.share(lane, of: lanes, targetSize.height), buffers)
            }
        }
    }

    /// Resamples an image while it is being made: `produce(rows, first, limit)` writes up to `limit`
    /// source rows from `first` on into `rows` (which points at row `first`), returns how many (at
    /// least one), or `nil` on failure, which stops everything and returns `nil`. It runs on the
    /// calling thread, top to bottom, while another thread filters the rows written so far, so decode
    /// and resize overlap: the fastest way through one image when a core is idle.
    ///
    /// The other thread runs the horizontal pass as rows arrive and spends any wait on the vertical
    /// pass; what is left of that when the last row arrives is split across the cores.
    func resample(
        producingRowsWith produce: (_ rows: UnsafeMutablePointer<UInt8>, _ first: Int, _ limit: Int) -> Int?
    ) -> [UInt8]? {
        let bytesPerRow = sourceSize.width * 4
        let source = UnsafeMutablePointer<UInt8>.allocate(capacity: bytesPerRow * sourceSize.height)
        defer { source.deallocate() }
        let progress = RowProgress()
        let pixels = withBuffers(source: source, bytesPerRow: bytesPerRow) { buffers in
            let finished = DispatchGroup()
            // A queue of our own, not the global pool: its thread must start even when every pool
            // thread is busy, or the wait below could wait forever.
            DispatchQueue(label: "AsyncImageCache.resample").async(group: finished) {
                var filtered = 0
                var emitted = 0
                while filtered < sourceSize.height, let available = progress.rows(after: filtered) {
                    filter(filtered..<available, buffers)
                    filtered = available
                    // Vertical rows a few at a time, only while no new source rows wait.
                    while emitted < targetSize.height && sourceRowsNeeded(forTargetRows: emitted + 1) <= filtered
                        && progress.written == filtered && filtered < sourceSize.height
                    {
                        let end = min(emitted + 4, targetSize.height)
                        guard sourceRowsNeeded(forTargetRows: end) <= filtered else { break }
                        sum(emitted..<end, buffers)
                        emitted = end
                    }
                }
                progress.emitted = emitted
            }
            var written = 0
            while written < sourceSize.height {
                guard let count = produce(source + written * bytesPerRow, written, sourceSize.height - written)
                else { break }
                written += count
                progress.publish(written)
            }
            if written < sourceSize.height { progress.fail() }
            finished.wait()
            guard !progress.failed else { return }
            let remaining = progress.emitted..<targetSize.height
            let lanes = remaining.count < 16 ? 1 : min(4, ProcessInfo.processInfo.activeProcessorCount)
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                let share = Self.share(lane, of: lanes, remaining.count)
                sum((remaining.lowerBound + share.lowerBound)..<(remaining.lowerBound + share.upperBound), buffers)
            }
        }
        return progress.failed ? nil : pixels
    }

    /// Resamples an image while it is being made, all on the calling thread: the cheapest way through
    /// when every core already has work. `produce` is as in ``resample(producingRowsWith:)``, but
    /// `rows` is a buffer of a few rows that each call overwrites.
    ///
    /// Each batch of source rows is filtered into a ring of intermediate rows as soon as it is
    /// written, and every target row whose taps are all in the ring is summed at once. Apart from the
    /// output, the memory used is a few rows (kilobytes, in cache), where the overlapping variant keeps
    /// the whole source and intermediate (for a 1200x800 photo shown 954 wide, 16 MB touched once each).
    func resample(
        streamingRowsWith produce: (_ rows: UnsafeMutablePointer<UInt8>, _ first: Int, _ limit: Int) -> Int?
    ) -> [UInt8]? {
        let batch = 8
        let bytesPerRow = sourceSize.width * 4
        // A row is overwritten `capacity` rows later. Everything summable is summed after each batch,
        // so the rows still to be read start within `ringRowsBesidesBatch` of the rows written, and a
        // batch writes at most `batch` more.
        let capacity = min(sourceSize.height, batch + ringRowsBesidesBatch)
        let source = UnsafeMutablePointer<UInt8>.allocate(capacity: bytesPerRow * batch)
        let ring = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: targetSize.width * capacity)
        let scratch = UnsafeMutableBufferPointer<SIMD4<Float>>.allocate(
            capacity: max(sourceSize.width, targetSize.width))
        defer {
            source.deallocate()
            ring.deallocate()
            scratch.deallocate()
        }
        let intermediate = IntermediateRows(base: ring, width: targetSize.width, capacity: capacity)
        let byteCount = targetSize.width * targetSize.height * 4
        var failed = false
        let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { output, initializedCount in
            var written = 0
            var emitted = 0
            while written < sourceSize.height {
                guard let count = produce(source, written, min(batch, sourceSize.height - written)), count > 0 else {
                    failed = true
                    break
                }
                horizontalPass(
                    rows: written..<(written + count), source: source, firstSourceRow: written,
                    bytesPerRow: bytesPerRow, intermediate: intermediate, row: scratch)
                written += count
                var end = emitted
                while end < targetSize.height && sourceRowsNeeded(forTargetRows: end + 1) <= written { end += 1 }
                if end > emitted {
                    verticalPass(
                        rows: emitted..<end, intermediate: intermediate, output: output.baseAddress!, sums: scratch)
                    emitted = end
                }
            }
            initializedCount = failed ? 0 : byteCount
        }
        return failed ? nil : pixels
    }

    private func filter(_ rows: Range<Int>, _ buffers: ResamplingBuffers) {
        withScratch(sourceSize.width) { row in
            horizontalPass(
                rows: rows, source: buffers.source, bytesPerRow: buffers.bytesPerRow,
                intermediate: buffers.intermediate, row: row)
        }
    }

    private func sum(_ rows: Range<Int>, _ buffers: ResamplingBuffers) {
        guard !rows.isEmpty else { return }
        withScratch(targetSize.width) { sums in
            verticalPass(rows: rows, intermediate: buffers.intermediate, output: buffers.output, sums: sums)
        }
    }

    /// Runs `body` with the source, the premultiplied intermediate (target width x source height,
    /// uninitialized) and the output bytes, and returns the output, which `body` must fill.
    private func withBuffers(
        source: UnsafeRawPointer, bytesPerRow: Int, _ body: (ResamplingBuffers) -> Void
    ) -> [UInt8] {
        let rows = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: targetSize.width * sourceSize.height)
        defer { rows.deallocate() }
        let intermediate = IntermediateRows(base: rows, width: targetSize.width, capacity: sourceSize.height)
        let byteCount = targetSize.width * targetSize.height * 4
        return [UInt8](unsafeUninitializedCapacity: byteCount) { output, initializedCount in
            body(
                ResamplingBuffers(
                    source: source, bytesPerRow: bytesPerRow, intermediate: intermediate, output: output.baseAddress!))
            initializedCount = byteCount
        }
    }

    private func withScratch(_ count: Int, _ body: (UnsafeMutableBufferPointer<SIMD4<Float>>) -> Void) {
        let scratch = UnsafeMutableBufferPointer<SIMD4<Float>>.allocate(capacity: count)
        defer { scratch.deallocate() }
        body(scratch)
    }

    /// The `lane`th of `lanes` nearly equal consecutive parts of `0..<count`.
    private static func share(_ lane: Int, of lanes: Int, _ count: Int) -> Range<Int> {
        (count * lane / lanes)..<(count * (lane + 1) / lanes)
    }
}

/// The buffers of one resize, handed to other threads. Each thread writes only its own rows, and a
/// row written on one thread is read on another only after a lock or a join orders the two.
private struct ResamplingBuffers: @unchecked Sendable {
    let source: UnsafeRawPointer
    let bytesPerRow: Int
    let intermediate: IntermediateRows
    let output: UnsafeMutablePointer<UInt8>
}

/// How many source rows the producer has written, or that it failed, and how many target rows the
/// consumer summed; the lock guards all three.
private final class RowProgress: @unchecked Sendable {
    private let condition = NSCondition()
    private var writtenRows = 0
    private var hasFailed = false
    private var emittedRows = 0

    var failed: Bool {
        condition.withLock { hasFailed }
    }

    /// The source rows written so far, without waiting.
    var written: Int {
        condition.withLock { writtenRows }
    }

    /// The target rows the consumer has summed, from the top.
    var emitted: Int {
        get { condition.withLock { emittedRows } }
        set { condition.withLock { emittedRows = newValue } }
    }

    func publish(_ rows: Int) {
        condition.withLock { writtenRows = rows }
        condition.signal()
    }

    func fail() {
        condition.withLock { hasFailed = true }
        condition.signal()
    }

    /// Waits until more than `rows` rows are written and returns their count; `nil` once the producer failed.
    func rows(after rows: Int) -> Int? {
        condition.lock()
        defer { condition.unlock() }
        while writtenRows <= rows && !hasFailed { condition.wait() }
        return hasFailed ? nil : writtenRows
    }
}
