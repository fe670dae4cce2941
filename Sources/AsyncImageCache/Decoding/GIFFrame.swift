#if canImport(CGIF)
import CGIF

/// The first image of a GIF: where it sits on the logical screen, its colors and how its rows are stored.
struct GIFFrame {
    /// The frame's left and top edge on the screen; the frame may reach past the screen's edges.
    let left: Int
    let top: Int
    let size: PixelSize
    let isInterlaced: Bool
    /// The local color table, or `nil` when the frame uses the global one.
    let localColorMap: UnsafeMutablePointer<ColorMapObject>?
    /// The color index drawn as transparent, from the Graphics Control Extension before the frame.
    let transparentIndex: Int?

    init(_ descriptor: GifImageDesc, transparentIndex: Int?) {
        left = Int(descriptor.Left)
        top = Int(descriptor.Top)
        size = PixelSize(width: Int(descriptor.Width), height: Int(descriptor.Height))
        isInterlaced = descriptor.Interlace
        localColorMap = descriptor.ColorMap
        self.transparentIndex = transparentIndex
    }

    /// The rows of a frame `height` rows high in the order an interlaced GIF stores them: every 8th row from
    /// row 0, every 8th from row 4, every 4th from row 2, then every 2nd from row 1.
    static func interlacedRowOrder(height: Int) -> [Int] {
        [(0, 8), (4, 8), (2, 4), (1, 2)].flatMap { start, step in Array(stride(from: start, to: height, by: step)) }
    }

    /// 256 RGBA entries from the local color table, else `global`: entries past the table's end and the
    /// transparent index are transparent black. With no table at all (GIF89a leaves the colors to the
    /// decoder), every entry but the transparent index is opaque black, as Chrome's decoder (Wuffs) has it:
    /// the transparent 1x1 placeholders of lazy-loading scripts are such files.
    func palette(global: UnsafeMutablePointer<ColorMapObject>?) -> [UInt8] {
        guard let map = localColorMap ?? global, let colors = map.pointee.Colors else {
            var black = [UInt8]((0..<256).flatMap { _ in [0, 0, 0, 255] as [UInt8] })
            if let transparentIndex { black[transparentIndex * 4 + 3] = 0 }
            return black
        }
        var palette = [UInt8](repeating: 0, count: 256 * 4)
        // An index past the table is undefined; like the transparent index it draws nothing rather than
        // a color the file never named.
        for index in 0..<min(Int(map.pointee.ColorCount), 256) where index != transparentIndex {
            let color = colors[index]
            palette.replaceSubrange(index * 4..<index * 4 + 4, with: [color.Red, color.Green, color.Blue, 255])
        }
        return palette
    }

    /// Reads the frame's rows from `file` and draws them on a transparent canvas of `screen` size, clipping
    /// whatever lies outside it; stops with ``ImageDecodingError/Reason/cancelled`` once `context` is
    /// cancelled (read every ``cancellationCheckRows`` rows). Image data that ends before the frame's last
    /// pixel, in a file that is all there, ends the frame: the rows it has are drawn, the row it ends in
    /// and those after it stay transparent (see ``GIFFile/readRow(into:isLast:)``). Bytes that run out after
    /// the last pixel, before the block terminator, leave the frame whole.
    func composite(
        on screen: PixelSize, palette: [UInt8], reading file: GIFFile, context: ImageDecodingContext
    ) throws(ImageDecodingError) -> [UInt8] {
        var canvas = [UInt8](repeating: 0, count: screen.pixelCount * 4)
        guard size.width > 0, size.height > 0 else { return canvas }
        // Columns of the frame that land on the screen.
        let visibleColumns = max(0, min(size.width, screen.width - left) - max(0, -left))
        let firstColumn = max(0, -left)
        var row = [GifPixelType](repeating: 0, count: size.width)
        let rowOrder = isInterlaced ? Self.interlacedRowOrder(height: size.height) : Array(0..<size.height)
        for (index, frameRow) in rowOrder.enumerated() {
            if index % Self.cancellationCheckRows == 0 { try context.checkCancellation(format: .gif) }
            let isWhole = try row.withUnsafeMutableBufferPointer { buffer throws(ImageDecodingError) in
                try file.readRow(into: buffer, isLast: index == rowOrder.count - 1)
            }
            guard isWhole else { break }
            let screenRow = top + frameRow
            guard visibleColumns > 0, screenRow >= 0, screenRow < screen.height else { continue }
            canvas.withUnsafeMutableBytes { canvas in
                palette.withUnsafeBytes { palette in
                    var target = (screenRow * screen.width + left + firstColumn) * 4
                    for column in firstColumn..<firstColumn + visibleColumns {
                        // One 32-bit move per pixel: the palette entry is already RGBA.
                        let color = palette.loadUnaligned(fromByteOffset: Int(row[column]) * 4, as: UInt32.self)
                        canvas.storeBytes(of: color, toByteOffset: target, as: UInt32.self)
                        target += 4
                    }
                }
            }
        }
        return canvas
    }

    /// How many rows ``composite(on:palette:reading:context:)`` reads between two looks at the cancellation.
    static var cancellationCheckRows: Int { 32 }
}
#endif
