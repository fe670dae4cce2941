#if canImport(CWebP)
import CWebP
import Foundation

/// The first frame of an animated WebP, found with libwebp's demuxer and drawn on a transparent canvas.
///
/// libwebp's `WebPDecode` refuses animations, and its animation decoder composites every frame at full size.
/// Here the demuxer only locates frame 1 (its bitstream, offset and size) and the frame alone is decoded,
/// scaled with the canvas. Frame 1 is drawn on an empty canvas, where alpha blending leaves it as it is, so
/// its pixels are copied in place; the ANIM chunk's background color is a hint that viewers ignore and so is
/// it here.
///
/// The demuxer refuses a whole file for a last chunk that runs past the RIFF size. When that chunk is metadata,
/// EXIF or XMP, which nothing here reads (and an EXIF chunk then not the header reader either, see
/// ``ImageHeader/parseWebP(_:)``), the frames before it are demuxed from a copy that ends where it starts.
struct WebPFirstFrame {
    private let bytes: UnsafeRawBufferPointer

    /// The frame of the WebP file `bytes`, which must stay valid while this value is used.
    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Decodes frame 1 of a `canvas`-sized animation onto a transparent canvas of `output` size (of the full
    /// size instead for a lossy frame with alpha, as for a still picture: see ``ImageDecoders/WebP``); what libwebp
    /// allocates at the frame's full size must fit `context`'s pixel budget (see
    /// ``ImageDecoders/WebP/checkFullSizeBuffers(_:size:_:)``). The frame decodes as a still image does, in
    /// chunks of `chunkSize` bytes that stop once `context` is cancelled (see
    /// ``ImageDecoders/WebP/decode(_:size:scaledTo:into:bytesPerRow:byteCount:context:chunkSize:)``).
    func decode(canvas: PixelSize, output: PixelSize, context: ImageDecodingContext, chunkSize: Int? = nil)
        throws(ImageDecodingError) -> Bitmap
    {
        var data = WebPData(bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: bytes.count)
        var state = WEBP_DEMUX_PARSING_HEADER
        // The partial demuxer reports how far it got, which tells data that ends early from malformed data.
        if let demuxer = WebPDemuxPartial(&data, &state) {
            defer { WebPDemuxDelete(demuxer) }
            return try Self.decodeFirstFrame(
                demuxer, of: bytes, state: state, canvas: canvas, output: output, context: context,
                chunkSize: chunkSize)
        }
        let parseError = Self.corrupt("WebPDemux: parse error")
        guard state == WEBP_DEMUX_PARSE_ERROR else { throw Self.truncated }
        guard let withoutMetadata = Self.withoutMetadataPastTheRIFFSize(bytes) else { throw parseError }
        return try withoutMetadata.withUnsafeBufferPointer { copy throws(ImageDecodingError) in
            var data = WebPData(bytes: copy.baseAddress, size: copy.count)
            var state = WEBP_DEMUX_PARSING_HEADER
            // Whatever else made the demuxer refuse the file is still in the copy: the file's own error.
            guard let demuxer = WebPDemuxPartial(&data, &state) else { throw parseError }
            defer { WebPDemuxDelete(demuxer) }
            return try Self.decodeFirstFrame(
                demuxer, of: bytes, state: state, canvas: canvas, output: output,
                context: context, chunkSize: chunkSize)
        }
    }

    /// A copy of the RIFF file `bytes` without its last chunk, when that chunk is an EXIF or XMP chunk whose
    /// size (padded to an even length, as libwebp's demuxer reads it) runs past the RIFF size, with the RIFF
    /// size ending where the chunk started; `nil` for any other file. Such a chunk can never be whole, however
    /// many bytes come, and the demuxer refuses the whole file for it (a parse error), where `WebPDecode`
    /// stops at a still image's data and the header reader ignores it (EXIF) or never reads it (XMP). Any
    /// other chunk, a frame above all, is not dropped: the file stays refused. A chunk that fits the RIFF size
    /// but not the data is left to the partial demuxer, which waits for it.
    static func withoutMetadataPastTheRIFFSize(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let base = bytes.baseAddress else { return nil }
        // Read in place, through the header reader's bounds-checked window.
        let file = HeaderBytes(
            Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none),
            format: .webp)
        guard file.matches("RIFF", at: 0), file.matches("WEBP", at: 8), let riffSize = try? file.uint32LE(at: 4)
        else { return nil }
        let riffEnd = 8 + riffSize
        let end = min(riffEnd, file.count)
        var offset = 12
        while offset + 8 <= end, let size = try? file.uint32LE(at: offset + 4) {
            let next = offset + 8 + size + (size & 1)
            if next > riffEnd {
                guard file.matches("EXIF", at: offset) || file.matches("XMP ", at: offset) else { return nil }
                var copy = [UInt8](bytes[..<offset])
                // The RIFF size counts the bytes after its own field: "WEBP" and the chunks kept.
                let kept = offset - 8
                copy.replaceSubrange(4..<8, with: (0..<4).map { UInt8(truncatingIfNeeded: kept >> (8 * $0)) })
                return copy
            }
            offset = next
        }
        return nil
    }

    /// Decodes frame 1 of the file `bytes`, which `demuxer` parsed as far as `state` (see
    /// ``decode(canvas:output:context:chunkSize:)``).
    ///
    /// A file that ends before its RIFF size does (a download cut short) gives frame 1 once that frame is
    /// whole and the header reader can answer from the same bytes, and is `.truncated` until then: the
    /// picture is shown at its displayed size, the header's (EXIF orientation applied), and an animation's
    /// EXIF chunk comes after every frame. Without the EXIF flag the header is known from the VP8X chunk, and
    /// frame 1 decodes as soon as it is whole; with it, not before the header reader has the orientation
    /// (see ``ImageHeader/parseWebP(_:)``). A still image is decoded by `WebPDecode`, which refuses any file
    /// shorter than its RIFF size: its header may be known long before it decodes, never the other way round.
    private static func decodeFirstFrame(
        _ demuxer: OpaquePointer, of bytes: UnsafeRawBufferPointer, state: WebPDemuxState, canvas: PixelSize,
        output: PixelSize, context: ImageDecodingContext, chunkSize: Int?
    ) throws(ImageDecodingError) -> Bitmap {
        var frame = WebPIterator()
        guard WebPDemuxGetFrame(demuxer, 1, &frame) != 0 else {
            throw state == WEBP_DEMUX_DONE ? Self.corrupt("WebPDemux: no frame 1") : Self.truncated
        }
        defer { WebPDemuxReleaseIterator(&frame) }
        guard frame.complete != 0 else { throw Self.truncated }
        if state != WEBP_DEMUX_DONE, !Self.headerIsReadable(bytes) { throw Self.truncated }
        let frameSize = PixelSize(width: Int(frame.width), height: Int(frame.height))
        let bitstream = UnsafeRawBufferPointer(start: frame.fragment.bytes, count: frame.fragment.size)
        let features = try Self.checkBounds(frame, bitstream: bitstream, canvas: canvas)
        try ImageDecoders.WebP.checkFullSizeBuffers(features, size: frameSize, context)
        // A lossy frame with alpha is decoded on a full-size canvas, up to ``ImageDecoders/WebP/fullSizeAlphaPixels``,
        // as a still picture is: libwebp scales its colour without weighting it by alpha, which greyed the edges
        // of a white shape on a transparent ground, and the caller's resize does not.
        var output = output
        if features.format == 1, features.has_alpha != 0, output != canvas,
            canvas.pixelCount <= ImageDecoders.WebP.fullSizeAlphaPixels
        {
            try context.checkBudget(canvas.pixelCount, format: .webp)
            output = canvas
        }

        let horizontal = Self.scaledSpan(
            start: Int(frame.x_offset), length: Int(frame.width), of: canvas.width, scaledTo: output.width)
        let vertical = Self.scaledSpan(
            start: Int(frame.y_offset), length: Int(frame.height), of: canvas.height, scaledTo: output.height)
        let scaledFrame = PixelSize(width: horizontal.length, height: vertical.length)

        var pixels = [UInt8](repeating: 0, count: output.pixelCount * 4)
        try pixels.withUnsafeMutableBufferPointer { canvas throws(ImageDecodingError) in
            // libwebp writes the frame's rows straight into the canvas, one canvas row apart.
            let offset = (vertical.start * output.width + horizontal.start) * 4
            try ImageDecoders.WebP.decode(
                bitstream, size: frameSize, scaledTo: scaledFrame, into: canvas.baseAddress! + offset,
                bytesPerRow: output.width * 4, byteCount: canvas.count - offset, context: context,
                chunkSize: chunkSize)
        }
        return Bitmap(width: output.width, height: output.height, pixels: pixels)
    }

    /// Whether the header reader answers for `bytes` with anything but `.truncated`: a size, or an error that
    /// is the demuxer's and the frame decoder's to report in their own words.
    private static func headerIsReadable(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let data = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
        do {
            _ = try ImageHeader.parse(data)
            return true
        } catch {
            return error.reason != .truncated
        }
    }

    /// Where a frame spanning `length` pixels from `start` on a side of `full` pixels lands when that side is
    /// scaled to `scaled` pixels: the start rounded down, the end rounded up, kept inside the side, at least
    /// one pixel and never longer than the frame itself.
    static func scaledSpan(start: Int, length: Int, of full: Int, scaledTo scaled: Int) -> (start: Int, length: Int) {
        guard scaled != full else { return (start, length) }
        let scaledStart = min(start * scaled / full, scaled - 1)
        let scaledEnd = min(((start + length) * scaled + full - 1) / full, scaled)
        return (scaledStart, max(1, min(length, scaledEnd - scaledStart)))
    }

    /// Checks what the demuxer should already have checked, because the frame is written into the canvas
    /// in place: the frame lies inside the canvas and its bitstream has the frame's size. Returns the
    /// bitstream's features.
    private static func checkBounds(_ frame: WebPIterator, bitstream: UnsafeRawBufferPointer, canvas: PixelSize)
        throws(ImageDecodingError) -> WebPBitstreamFeatures
    {
        guard frame.x_offset >= 0, frame.y_offset >= 0, frame.width > 0, frame.height > 0,
            Int(frame.x_offset) + Int(frame.width) <= canvas.width,
            Int(frame.y_offset) + Int(frame.height) <= canvas.height
        else { throw corrupt("frame 1 lies outside the canvas") }
        var features = WebPBitstreamFeatures()
        try ImageDecoders.WebP.check(
            WebPGetFeatures(bitstream.baseAddress?.assumingMemoryBound(to: UInt8.self), bitstream.count, &features))
        guard features.width == frame.width, features.height == frame.height else {
            throw corrupt(
                "frame 1 is \(features.width)x\(features.height), its header says \(frame.width)x\(frame.height)")
        }
        return features
    }

    private static let truncated = ImageDecodingError(format: .webp, reason: .truncated)

    private static func corrupt(_ message: String) -> ImageDecodingError {
        ImageDecodingError(format: .webp, reason: .corrupt(message))
    }
}
#endif
