#if canImport(CGIF)
import CGIF
import Foundation

/// An open giflib decoder reading bytes in memory, through which every failing giflib call becomes an
/// ``ImageDecodingError``.
struct GIFFile {
    /// giflib's state; valid only inside ``read(_:_:)``.
    let handle: UnsafeMutablePointer<GifFileType>
    private let source: UnsafeMutablePointer<GIFByteSource>

    /// Opens `bytes` with giflib, which reads the header and the logical screen descriptor, runs `body` and
    /// closes the file again, also when `body` throws.
    static func read<Value>(
        _ bytes: UnsafeRawBufferPointer, _ body: (GIFFile) throws(ImageDecodingError) -> Value
    ) throws(ImageDecodingError) -> Value {
        var source = GIFByteSource(bytes: bytes)
        return try withUnsafeMutablePointer(to: &source) { source throws(ImageDecodingError) in
            var openError: Int32 = D_GIF_SUCCEEDED
            // giflib hands the pointer back to the callback as the file's UserData; the callback is a C function
            // pointer and captures nothing. Neither outlives this call, and neither do the bytes they read.
            let handle = DGifOpen(
                source,
                { file, buffer, count in
                    guard let file, let buffer, let source = file.pointee.UserData else { return 0 }
                    return source.assumingMemoryBound(to: GIFByteSource.self).pointee.read(
                        into: buffer, count: count)
                }, &openError)
            guard let handle else { throw error(code: openError, ranOut: source.pointee.ranOut) }
            defer { DGifCloseFile(handle, nil) }
            return try body(GIFFile(handle: handle, source: source))
        }
    }

    /// The logical screen's size from the header.
    var screenSize: PixelSize { PixelSize(width: Int(handle.pointee.SWidth), height: Int(handle.pointee.SHeight)) }

    /// The kind of the next record: an extension, an image descriptor or the trailer.
    func nextRecordType() throws(ImageDecodingError) -> GifRecordType {
        var record = UNDEFINED_RECORD_TYPE
        try check(DGifGetRecordType(handle, &record))
        return record
    }

    /// Reads one extension with all its sub-blocks and returns its function code and its first sub-block
    /// (giflib's copy starts with the length byte; `nil` when the extension has no data).
    func readExtension() throws(ImageDecodingError) -> (code: Int32, firstBlock: [UInt8]?) {
        var code: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        try check(DGifGetExtension(handle, &code, &block))
        let firstBlock = block.map { Array(UnsafeBufferPointer(start: $0, count: Int($0[0]) + 1)) }
        while block != nil {
            try check(DGifGetExtensionNext(handle, &block))
        }
        return (code, firstBlock)
    }

    /// Reads the image descriptor after an image record; the descriptor is then in `handle.pointee.Image`.
    func readImageDescriptor() throws(ImageDecodingError) -> GifImageDesc {
        try check(DGifGetImageDesc(handle))
        return handle.pointee.Image
    }

    /// Decodes the next row of the current image into `row`, whose count is the image's width; `false`,
    /// with `row` partly written, when the image data ends before the row does while the file's bytes have
    /// not run out: its LZW end code comes early, or its block terminator, or a code giflib cannot decode.
    /// Browsers end the frame there (Wuffs, which Chrome uses, takes any such LZW error for the end of the
    /// data), and a file cut short is still `.truncated`.
    ///
    /// After the image's last pixel giflib reads on to the block terminator that ends its data. For the
    /// `isLast` row, bytes that run out there end the data as that terminator would: a file whose data holds
    /// every pixel but stops before the terminator or the trailer is whole, as giflib-based viewers and
    /// browsers show it. Bytes that run out before the last pixel still throw `.truncated`.
    ///
    /// A data sub-block the bytes end inside holds the bytes that are there (see
    /// ``GIFByteSource/readsImageData``): giflib reads a sub-block whole before it decodes a code of it, and
    /// its codes can give the last pixel before the end of the sub-block (the LZW end code comes after it).
    /// A frame whose last code before the cut gives its last pixel is whole; one that needs a code after the
    /// cut is `.truncated`, as a code is decoded only when all its bits have been read.
    func readRow(into row: UnsafeMutableBufferPointer<GifPixelType>, isLast: Bool) throws(ImageDecodingError)
        -> Bool
    {
        source.pointee.endsWithBlockTerminator = isLast
        source.pointee.readsImageData = true
        defer {
            source.pointee.endsWithBlockTerminator = false
            source.pointee.readsImageData = false
        }
        guard DGifGetLine(handle, row.baseAddress, Int32(row.count)) != GIF_OK else { return true }
        let code = handle.pointee.Error
        if !source.pointee.ranOut && (code == D_GIF_ERR_EOF_TOO_SOON || code == D_GIF_ERR_IMAGE_DEFECT) {
            return false
        }
        throw Self.error(code: code, ranOut: source.pointee.ranOut)
    }

    /// Throws the error giflib recorded when `status` is not `GIF_OK`.
    private func check(_ status: Int32) throws(ImageDecodingError) {
        guard status != GIF_OK else { return }
        throw Self.error(code: handle.pointee.Error, ranOut: source.pointee.ranOut)
    }

    /// giflib words a short read as a failed read, a missing screen descriptor or a defect, depending on
    /// where it happens; the source knows whether the data ran out.
    private static func error(code: Int32, ranOut: Bool) -> ImageDecodingError {
        if ranOut || code == D_GIF_ERR_EOF_TOO_SOON { return ImageDecodingError(format: .gif, reason: .truncated) }
        let message = GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
        return ImageDecodingError(format: .gif, reason: .corrupt(message))
    }
}

/// The bytes giflib reads through its callback, with the read position.
struct GIFByteSource {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0
    /// Whether a read asked for more bytes than were left: the data ended early.
    private(set) var ranOut = false
    /// Whether a one-byte read past the end gets a 0, the block terminator that ends an image's data.
    ///
    /// giflib reads a sub-block's length byte alone, both for the next codes of an image and, after its last
    /// pixel, to skip to the terminator. A 0 ends the skip; in the middle of the codes giflib takes it for a
    /// defect, and since ``ranOut`` is then set the error is still `.truncated`.
    var endsWithBlockTerminator = false
    /// Whether giflib is reading an image's data, where a sub-block that the bytes end inside is answered as
    /// one that holds the bytes there are: its length byte is read as their count.
    ///
    /// In an image's data giflib reads a sub-block's length byte alone, then all the bytes it names in one
    /// read, and decodes none of them before that read succeeds; with the length the file declares, a cut
    /// inside the sub-block would fail the read and lose the codes before the cut. Answered with the bytes
    /// there are, giflib decodes those codes and then reads the next length byte past the end: a frame
    /// they finish is whole, one they do not is `.truncated`. ``ranOut`` is set, so no failure after it
    /// passes for an image defect in a file that is all there.
    var readsImageData = false
    /// In an image's data, how many bytes of the current sub-block giflib has yet to read: 0 when its next
    /// read is a length byte.
    private var subBlockBytesLeft = 0
    /// Set when giflib reads an image's data other than as a length byte, then the bytes it names: the
    /// length bytes are no longer known and none is rewritten.
    private var lostSubBlocks = false

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Copies up to `count` bytes into `buffer` and returns how many; fewer than asked for means the end.
    mutating func read(into buffer: UnsafeMutablePointer<GifByteType>, count: Int32) -> Int32 {
        let wanted = max(0, Int(count))
        if readsImageData && !lostSubBlocks, let cut = cutSubBlockLength(wanted: wanted) {
            // The length byte of the sub-block the bytes end inside, answered as the count of its bytes.
            ranOut = true
            buffer[0] = GifByteType(cut)
            offset += 1
            subBlockBytesLeft = cut
            return 1
        }
        let available = min(wanted, bytes.count - offset)
        if available < wanted { ranOut = true }
        if endsWithBlockTerminator && wanted == 1 && available == 0 {
            buffer[0] = 0
            return 1
        }
        guard available > 0, let base = bytes.baseAddress else { return 0 }
        UnsafeMutableRawPointer(buffer).copyMemory(from: base + offset, byteCount: available)
        offset += available
        return Int32(available)
    }

    /// For a read of `wanted` bytes in an image's data: when it is a sub-block's length byte and the bytes
    /// end after it but inside the sub-block, how many of the sub-block's bytes there are; otherwise `nil`,
    /// after keeping track of where giflib is in its sub-blocks.
    private mutating func cutSubBlockLength(wanted: Int) -> Int? {
        guard subBlockBytesLeft == 0 else {
            // The bytes of the sub-block, all in one read.
            if wanted != subBlockBytesLeft { lostSubBlocks = true }
            subBlockBytesLeft = 0
            return nil
        }
        guard wanted == 1 else {
            lostSubBlocks = true
            return nil
        }
        guard offset < bytes.count else { return nil }
        let declared = Int(bytes[offset])
        let there = bytes.count - offset - 1
        guard declared > there, there > 0 else {
            subBlockBytesLeft = declared
            return nil
        }
        return there
    }
}
#endif
