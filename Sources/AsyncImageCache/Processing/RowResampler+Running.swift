import Foundation

extension RowResampler {
    /// Resamples a whole image already in memory, split across the cores when it is worth it.
    func resample(source: UnsafeRawPointer, bytesPerRow: Int) -> [UInt8] {
        // Nothing can cancel it.
        resample(source: source, bytesPerRow: bytesPerRow, cancellation: nil)!
    }

    /// ``resample(source:bytesPerRow:)`` that stops part way, and returns `nil`, once `cancellation` is
    /// raised: each lane reads it every ``cancellationCheckRows`` rows. Without `usesOtherThreads` it
    /// runs in one lane, on the calling thread.
    func resample(
        source: UnsafeRawPointer, bytesPerRow: Int, cancellation: DecodeCancellation?, usesOtherThreads: Bool = true
    ) -> [UInt8]? {
        // Below about a million multiply-adds a pass, handing rows to other threads costs more than it saves.
        let work = targetSize.width * sourceSize.height * max(1, sourceSize.width / max(1, targetSize.width))
        let lanes =
            !usesOtherThreads || work < 1 << 20 ? 1 : min(4, ProcessInfo.processInfo.activeProcessorCount)
        let pixels = withBuffers(source: source, bytesPerRow: bytesPerRow) { buffers in
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                filter(Self.share(lane, of: lanes, sourceSize.height), buffers, cancellation)
            }
            guard cancellation?.isCancelled != true else { return }
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                sum(Self.share(lane, of: lanes, targetSize.height), buffers, cancellation)
            }
        }
        // A lane that saw the flag stopped short, so the rows are incomplete; raised only after the last
        // row, the resize is whole, but nobody wants it either.
        return cancellation?.isCancelled == true ? nil : pixels
    }

    /// How many rows a lane of ``resample(source:bytesPerRow:cancellation:usesOtherThreads:)`` does between two
    /// reads of the cancellation flag.
    static var cancellationCheckRows: Int { 32 }

    /// Resamples an image while it is being made: `produce(rows, first, limit)` writes up to `limit`
    /// source rows from `first` on into `rows`, returns how many (at least one), or `nil` on failure,
    /// which stops everything and returns `nil`.
    ///
    /// It runs on the calling thread, top to bottom, into a ring of source rows, while another thread
    /// resizes the rows written so far as ``resample(streamingRowsWith:)`` would: decode and resize
    /// overlap, the fastest way through one image when a core is idle. The producer waits when the
    /// ring is full, so neither side holds more than a few dozen rows.
    func resample(
        producingRowsWith produce: (_ rows: UnsafeMutablePointer<UInt8>, _ first: Int, _ limit: Int) -> Int?
    ) -> [UInt8]? {
        let bytesPerRow = sourceSize.width * 4
        // Room for the producer to run ahead by a few of its batches before it waits.
        let capacity = min(sourceSize.height, max(4 * Self.streamBatch, sourceSize.height / 16))
        let ring = UnsafeMutablePointer<UInt8>.allocate(capacity: bytesPerRow * capacity)
        defer { ring.deallocate() }
        let progress = RowProgress()
        let byteCount = targetSize.width * targetSize.height * 4
        var failed = false
        let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { output, initializedCount in
            let shared = SharedRows(ring: ring, output: output.baseAddress!)
            let finished = DispatchGroup()
            // A queue of our own, not the global pool: its thread must start even when every pool
            // thread is busy, or the producer could wait for room forever.
            DispatchQueue(label: "AsyncImageCache.resample").async(group: finished) { [self] in
                var stream = RowStream(self)
                defer { stream.deallocate() }
                var taken = 0
                while taken < sourceSize.height, let available = progress.rows(after: taken) {
                    while taken < available {
                        let slot = taken % capacity
                        let count = min(Self.streamBatch, available - taken, capacity - slot)
                        stream.take(count, rows: shared.ring + slot * bytesPerRow, into: shared.output)
                        taken += count
                        progress.release(upTo: taken)
                    }
                }
            }
            var written = 0
            while written < sourceSize.height {
                let slot = written % capacity
                // Rows below `released` have been resized; their slots may be written again.
                guard let released = progress.room(toWrite: written, capacity: capacity) else { break }
                let limit = min(sourceSize.height - written, capacity - slot, capacity - (written - released))
                guard let count = produce(ring + slot * bytesPerRow, written, limit), count > 0 else { break }
                written += count
                progress.publish(written)
            }
            if written < sourceSize.height { progress.fail() }
            finished.wait()
            failed = progress.failed
            initializedCount = failed ? 0 : byteCount
        }
        return failed ? nil : pixels
    }

    /// Resamples an image while it is being made, all on the calling thread: the cheapest way through
    /// when every core already has work. `produce` is as in ``resample(producingRowsWith:)``, with
    /// `rows` a buffer of a few rows that each call overwrites.
    ///
    /// Apart from the output, the memory used is a few rows (kilobytes, in cache) where a resize of a
    /// whole decoded image keeps the source and the intermediate (for a 1200x800 photo shown 954 wide,
    /// 16 MB touched once each).
    func resample(
        streamingRowsWith produce: (_ rows: UnsafeMutablePointer<UInt8>, _ first: Int, _ limit: Int) -> Int?
    ) -> [UInt8]? {
        let bytesPerRow = sourceSize.width * 4
        let source = UnsafeMutablePointer<UInt8>.allocate(capacity: bytesPerRow * Self.streamBatch)
        var stream = RowStream(self)
        defer {
            source.deallocate()
            stream.deallocate()
        }
        let byteCount = targetSize.width * targetSize.height * 4
        var failed = false
        let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { output, initializedCount in
            var written = 0
            while written < sourceSize.height {
                let limit = min(Self.streamBatch, sourceSize.height - written)
                guard let count = produce(source, written, limit), count > 0 else {
                    failed = true
                    break
                }
                stream.take(count, rows: source, into: output.baseAddress!)
                written += count
            }
            initializedCount = failed ? 0 : byteCount
        }
        return failed ? nil : pixels
    }

    /// The most source rows a ``RowStream`` takes at once.
    static var streamBatch: Int { 8 }

    private func filter(_ rows: Range<Int>, _ buffers: ResamplingBuffers, _ cancellation: DecodeCancellation?) {
        withScratch(sourceSize.width) { row in
            Self.inChunks(rows, until: cancellation) { chunk in
                horizontalPass(
                    rows: chunk, source: buffers.source, bytesPerRow: buffers.bytesPerRow,
                    intermediate: buffers.intermediate, row: row)
            }
        }
    }

    private func sum(_ rows: Range<Int>, _ buffers: ResamplingBuffers, _ cancellation: DecodeCancellation?) {
        guard !rows.isEmpty else { return }
        withScratch(targetSize.width) { sums in
            Self.inChunks(rows, until: cancellation) { chunk in
                verticalPass(rows: chunk, intermediate: buffers.intermediate, output: buffers.output, sums: sums)
            }
        }
    }

    /// Hands `rows` to `body` ``cancellationCheckRows`` at a time, and stops before the next chunk once
    /// `cancellation` is raised.
    private static func inChunks(
        _ rows: Range<Int>, until cancellation: DecodeCancellation?, _ body: (Range<Int>) -> Void
    ) {
        for start in stride(from: rows.lowerBound, to: rows.upperBound, by: cancellationCheckRows) {
            if cancellation?.isCancelled == true { return }
            body(start..<min(start + cancellationCheckRows, rows.upperBound))
        }
    }

    /// Runs `body` with the source, the premultiplied intermediate (target width x source height,
    /// uninitialized) and the output bytes, and returns the output, which `body` must fill.
    private func withBuffers(
        source: UnsafeRawPointer, bytesPerRow: Int, _ body: (ResamplingBuffers) -> Void
    ) -> [UInt8] {
        let intermediate = allocateIntermediate(capacity: sourceSize.height)
        defer { intermediate.base.deallocate() }
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

/// A resize fed source rows top to bottom, a few at a time: each batch is filtered into a ring of
/// intermediate rows at once, and every target row whose taps are all in the ring is summed.
private struct RowStream {
    let resampler: RowResampler
    let intermediate: IntermediateRows
    let scratch: UnsafeMutableBufferPointer<SIMD4<Float>>
    /// Source rows taken so far.
    private(set) var taken = 0
    /// Target rows summed so far.
    private(set) var emitted = 0

    init(_ resampler: RowResampler) {
        self.resampler = resampler
        // A row is overwritten `capacity` rows later. Everything summable is summed after each batch,
        // so the rows still to be read start within `ringRowsBesidesBatch` of the rows taken, and a
        // batch adds at most `streamBatch` more.
        let capacity = min(
            resampler.sourceSize.height, RowResampler.streamBatch + resampler.ringRowsBesidesBatch)
        intermediate = resampler.allocateIntermediate(capacity: capacity)
        scratch = .allocate(capacity: max(resampler.sourceSize.width, resampler.targetSize.width))
    }

    func deallocate() {
        intermediate.base.deallocate()
        scratch.deallocate()
    }

    /// Takes the next `count` source rows (at most ``RowResampler/streamBatch``), contiguous at `rows`,
    /// and writes every target row they complete into `output` (which points at target row 0).
    mutating func take(_ count: Int, rows: UnsafeRawPointer, into output: UnsafeMutablePointer<UInt8>) {
        resampler.horizontalPass(
            rows: taken..<(taken + count), source: rows, firstSourceRow: taken,
            bytesPerRow: resampler.sourceSize.width * 4, intermediate: intermediate, row: scratch)
        taken += count
        var end = emitted
        while end < resampler.targetSize.height && resampler.sourceRowsNeeded(forTargetRows: end + 1) <= taken {
            end += 1
        }
        guard end > emitted else { return }
        resampler.verticalPass(rows: emitted..<end, intermediate: intermediate, output: output, sums: scratch)
        emitted = end
    }
}

/// The ring of source rows and the output of an overlapping resize, handed to the resizing thread.
/// The producer writes a ring slot only after the resizer released it, and the resizer reads it only
/// after the producer published it; the output is read only after the resizer finished.
private struct SharedRows: @unchecked Sendable {
    let ring: UnsafeMutablePointer<UInt8>
    let output: UnsafeMutablePointer<UInt8>
}

/// How many source rows the producer has written, how many the resizer has finished with, and
/// whether the producer failed; the lock guards all three.
private final class RowProgress: @unchecked Sendable {
    private let condition = NSCondition()
    private var writtenRows = 0
    private var releasedRows = 0
    private var hasFailed = false

    var failed: Bool {
        condition.withLock { hasFailed }
    }

    func publish(_ rows: Int) {
        condition.withLock { writtenRows = rows }
        condition.broadcast()
    }

    func fail() {
        condition.withLock { hasFailed = true }
        condition.broadcast()
    }

    /// The resizer is done with the rows below `rows`.
    func release(upTo rows: Int) {
        condition.withLock { releasedRows = rows }
        condition.broadcast()
    }

    /// Waits until more than `rows` rows are written and returns their count; `nil` once the producer failed.
    func rows(after rows: Int) -> Int? {
        condition.lock()
        defer { condition.unlock() }
        while writtenRows <= rows && !hasFailed { condition.wait() }
        return hasFailed ? nil : writtenRows
    }

    /// Waits until a ring of `capacity` rows has a free slot for row `written`, and returns the rows
    /// released so far.
    func room(toWrite written: Int, capacity: Int) -> Int? {
        condition.lock()
        defer { condition.unlock() }
        while written - releasedRows >= capacity && !hasFailed { condition.wait() }
        return hasFailed ? nil : releasedRows
    }
}
