#if canImport(CGIF)
import CGIF
import Foundation

extension ImageDecoders {
    /// Decodes the first frame of a GIF with giflib, composited on the logical screen, as 8-bit straight RGBA.
    ///
    /// The bitmap has the logical screen's size from the file's header, grown to take in the first frame where
    /// that reaches past it (as browsers and Pillow draw such a file, and as ``ImageHeader`` reads its size).
    /// The first frame sits at its own offset
    /// and may be smaller than the screen; pixels it does not cover, and pixels of its transparent color index
    /// (from the Graphics Control Extension), are fully transparent. Interlaced frames are put back in row
    /// order; a local color table wins over the global one, and a file with neither draws its pixels opaque
    /// black, as Chrome does. Reading stops after the first frame's pixels, so the later frames of an
    /// animation are never decoded.
    ///
    /// ```swift
    /// let bitmap = try ImageDecoders.GIF().decode(data, context: ImageDecodingContext(header: header))
    /// ```
    ///
    /// GIF has no reduced-size decode, so `context.minimumSize` is ignored and the caller resizes. Both the
    /// screen and the first frame are checked against ``ImageDecodingContext/pixelBudget`` before any pixel
    /// is decoded: the screen is the bitmap's size, the frame the work. Data that ends before the first
    /// frame's last pixel throws ``ImageDecodingError/Reason/truncated``; data that ends after it, inside the
    /// frame's last data sub-block once the LZW codes that give every pixel are there, or without the block
    /// terminator of the frame's data or the trailer, gives the whole frame, as giflib-based viewers and
    /// browsers show it. Anything giflib rejects throws `.corrupt` with its message,
    /// but for image data that ends before the frame's last pixel in a file that is all there (an early LZW
    /// end code or block terminator, a code that does not decode), which ends the frame as browsers end it:
    /// the rows before stay drawn, the rest transparent.
    /// The rows are read one by one, and ``ImageDecodingContext/isCancelled`` every few of them.
    public struct GIF: ImageDecoding {
        /// Creates a GIF decoder.
        public init() {}

        /// Decodes the first frame of `data` at the logical screen's size, grown to take in the frame.
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            guard !data.isEmpty else { throw ImageDecodingError(format: .gif, reason: .truncated) }
            return try data.withUnsafeBytes { bytes in
                Result { () throws(ImageDecodingError) in
                    try GIFFile.read(bytes) { file throws(ImageDecodingError) in
                        try Self.decodeFirstFrame(file, context: context)
                    }
                }
            }.get()
        }

        private static func decodeFirstFrame(_ file: GIFFile, context: ImageDecodingContext)
            throws(ImageDecodingError)
            -> Bitmap
        {
            let declared = file.screenSize
            // A huge screen is refused before anything is read; a screen of 0x0 takes the first image's size.
            try context.checkBudget(declared.pixelCount, format: .gif)
            var transparentIndex: Int?
            while true {
                switch try file.nextRecordType() {
                case EXTENSION_RECORD_TYPE:
                    let (code, firstBlock) = try file.readExtension()
                    if code == GRAPHICS_EXT_FUNC_CODE, let firstBlock {
                        transparentIndex = try Self.transparentIndex(fromControlBlock: firstBlock)
                    } else if code == PLAINTEXT_EXT_FUNC_CODE {
                        // A plain text block is a graphic of its own and uses up the control extension before it.
                        transparentIndex = nil
                    }
                case IMAGE_DESC_RECORD_TYPE:
                    let frame = GIFFrame(try file.readImageDescriptor(), transparentIndex: transparentIndex)
                    // The screen grown to take in the first image, as the header reads it.
                    let screen = declared.grown(
                        toRight: frame.left + frame.size.width, bottom: frame.top + frame.size.height)
                    guard screen.width > 0, screen.height > 0 else { throw corrupt("zero width or height (\(screen))") }
                    try context.checkBudget(screen.pixelCount, format: .gif)
                    try context.checkBudget(frame.size.pixelCount, format: .gif)
                    let palette = frame.palette(global: file.handle.pointee.SColorMap)
                    let pixels = try frame.composite(on: screen, palette: palette, reading: file, context: context)
                    return Bitmap(width: screen.width, height: screen.height, pixels: pixels)
                default:
                    // giflib reports unknown record bytes itself; what is left is the trailer.
                    throw corrupt("the file ends without an image")
                }
            }
        }

        /// The transparent color index in a Graphics Control Extension's first sub-block (length byte first).
        private static func transparentIndex(fromControlBlock block: [UInt8]) throws(ImageDecodingError) -> Int? {
            var control = GraphicsControlBlock()
            let status = block.withUnsafeBufferPointer { block in
                DGifExtensionToGCB(block.count - 1, block.baseAddress! + 1, &control)
            }
            guard status == GIF_OK else { throw corrupt("graphics control extension of \(block.count - 1) bytes") }
            return control.TransparentColor == NO_TRANSPARENT_COLOR ? nil : Int(control.TransparentColor)
        }

        private static func corrupt(_ message: String) -> ImageDecodingError {
            ImageDecodingError(format: .gif, reason: .corrupt(message))
        }
    }
}
#endif
