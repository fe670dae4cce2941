import AsyncImageCache

/// Where each thumbnail of a contact sheet goes: a grid of `columns` cells `cellWidth` wide, each
/// row as tall as its tallest thumbnail, with `gap` pixels between cells and around the edge.
///
/// A thumbnail narrower than its cell (an image smaller than the cell, which the store never
/// scales up) is centred in it; a shorter one is centred in its row.
///
/// ```swift
/// let layout = SheetLayout(sizes: [PixelSize(width: 240, height: 160)], cellWidth: 240, columns: 4, gap: 8)
/// print(layout.canvasSize)   // 256x176: one column, because there is one thumbnail
/// ```
struct SheetLayout {
    /// The top-left corner of each thumbnail, in the order of the sizes given.
    let origins: [(x: Int, y: Int)]
    /// The size of the whole sheet.
    let canvasSize: PixelSize

    /// The widest and tallest sheet written: libpng's limit on either side of a PNG.
    static let maximumSide = 1_000_000
    /// The most pixels a sheet may have: 2^28, a 1 GiB RGBA canvas.
    static let maximumPixels = 1 << 28

    /// The width of a sheet of `count` thumbnails in `columns` columns: fewer thumbnails than
    /// columns make it narrower.
    static func width(count: Int, cellWidth: Int, columns: Int, gap: Int) -> Int {
        gap + min(columns, count) * (cellWidth + gap)
    }

    /// Whether the sheet fits the limits on its sides and pixels, so it can be made and written.
    var fitsLimits: Bool {
        canvasSize.width <= Self.maximumSide && canvasSize.height <= Self.maximumSide
            && canvasSize.pixelCount <= Self.maximumPixels
    }

    init(sizes: [PixelSize], cellWidth: Int, columns: Int, gap: Int) {
        precondition(!sizes.isEmpty && cellWidth > 0 && columns > 0 && gap >= 0)
        // Fewer thumbnails than columns: the sheet is only as wide as the thumbnails need.
        let columnCount = min(columns, sizes.count)
        var origins: [(x: Int, y: Int)] = []
        var top = gap
        for rowStart in stride(from: 0, to: sizes.count, by: columnCount) {
            let row = sizes[rowStart..<min(rowStart + columnCount, sizes.count)]
            let rowHeight = row.map(\.height).max()!
            for (column, size) in row.enumerated() {
                let cellLeft = gap + column * (cellWidth + gap)
                origins.append((cellLeft + (cellWidth - size.width) / 2, top + (rowHeight - size.height) / 2))
            }
            top += rowHeight + gap
        }
        self.origins = origins
        canvasSize = PixelSize(
            width: Self.width(count: sizes.count, cellWidth: cellWidth, columns: columns, gap: gap), height: top)
    }

    /// The sheet: `images` drawn over an opaque white background at ``origins``, blending their
    /// alpha (rounded corners show the white behind them).
    func composite(_ images: [Bitmap]) -> Bitmap {
        precondition(images.count == origins.count)
        var canvas = [UInt8](repeating: 255, count: canvasSize.pixelCount * 4)
        let canvasWidth = canvasSize.width
        canvas.withUnsafeMutableBufferPointer { destination in
            for (image, origin) in zip(images, origins) {
                // A thumbnail wider than its cell (never made by the store) is clipped, not a crash.
                let visibleWidth = min(image.width, canvasWidth - origin.x)
                let visibleHeight = min(image.height, canvasSize.height - origin.y)
                guard visibleWidth > 0, visibleHeight > 0 else { continue }
                image.pixels.withUnsafeBufferPointer { source in
                    for y in 0..<visibleHeight {
                        var from = y * image.width * 4
                        var to = ((origin.y + y) * canvasWidth + origin.x) * 4
                        for _ in 0..<visibleWidth {
                            let alpha = Int(source[from + 3])
                            for channel in 0..<3 {
                                let over = Int(source[from + channel]) * alpha
                                let under = Int(destination[to + channel]) * (255 - alpha)
                                destination[to + channel] = UInt8((over + under + 127) / 255)
                            }
                            from += 4
                            to += 4
                        }
                    }
                }
            }
        }
        return Bitmap(width: canvasSize.width, height: canvasSize.height, pixels: canvas)
    }
}
