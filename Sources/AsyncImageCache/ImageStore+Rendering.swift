import Foundation

extension ImageStore {
    /// Decodes at the smallest size that covers the request, then orients, resizes, converts an embedded
    /// colour profile to sRGB and rounds.
    ///
    /// With `cancellation` raised, it stops at the decoder's next check or before the next step, and
    /// throws ``ImageDecodingError/Reason/cancelled``. Without `mayUseOtherCores` every step runs on
    /// the calling thread alone; it is read as each step starts, so a prefetch that a visible load joins
    /// while it decodes resizes as the visible load.
    func render(
        _ original: OriginalImage, for request: ImageRequest, cancellation: DecodeCancellation? = nil,
        mayUseOtherCores: @autoclosure () -> Bool = true
    ) throws(ImageDecodingError) -> Bitmap {
        let header = original.header
        let natural = header.displaySize
        var target: PixelSize?
        if let width = request.targetPixelWidth, width < natural.width {
            target = PixelSize(width: width, height: natural.height(atWidth: width))
        }
        let minimumStored = target.map { header.orientation.swapsWidthAndHeight ? $0.transposed : $0 }
        var context = ImageDecodingContext(
            header: header, minimumSize: decodingMinimum(minimumStored, header), pixelBudget: configuration.pixelBudget)
        context.cancellation = cancellation
        // A JPEG may come out of the decoder already resized (in stored orientation: the filter is the
        // same along both axes, so turning afterwards gives the same picture and turns a smaller bitmap;
        // the same bytes only in floating point, as the fixed-point path rounds between its two passes,
        // up to 15 levels apart on an opaque image turned 5-8).
        // Every step below looks at the flag before it starts; the row-by-row ones also while they run.
        let checkCancellation = { () throws(ImageDecodingError) in try context.checkCancellation(format: header.format)
        }
        // Cancelled between getting its slot and starting: no decode started, none is counted or reported.
        try checkCancellation()
        report(.decode, request.url)
        count { $0.decodes += 1 }
        var bitmap: Bitmap
        if let stored = minimumStored,
            let resized = try decodeResizing(
                original.data, context, to: stored, url: request.url, mayUseOtherCores: mayUseOtherCores())
        {
            bitmap = resized
        } else {
            bitmap = try configuration.decoder.decode(original.data, context: context)
            // Another decoder (the JPEG decoder itself, one wrapping the default) may scale a JPEG in the DCT
            // too: resized in stored orientation over the span of the picture, as the default path does.
            if let stored = minimumStored, let extent = scaledJPEGExtent(of: bitmap, context) {
                try checkCancellation()
                report(.resize, request.url)
                bitmap = try resized(bitmap, to: stored, sourceExtent: extent, context, mayUseOtherCores())
            }
        }
        if header.orientation != .up {
            try checkCancellation()
            report(.orient, request.url)
            bitmap = bitmap.oriented(header.orientation)
        }
        // A file that codes another size than its header declares (a HEIF or AVIF whose `ispe` disagrees
        // with its coded picture) decodes at the coded size: it comes out at the size the store reports for
        // it, as libavif scales such a picture to its `ispe`, not at the coded one (4096x4096 for a hostile
        // file that declares 64x64, for any request wider than 64; 96x64 for one that declares 192x128).
        // Scaling up stays within the pixel budget.
        if target == nil, bitmap.pixelSize != natural, natural.pixelCount <= configuration.pixelBudget {
            target = natural
        }
        if let target, bitmap.pixelSize != target {
            try checkCancellation()
            report(.resize, request.url)
            bitmap = try resized(bitmap, to: target, sourceExtent: nil, context, mayUseOtherCores())
        }
        #if !canImport(ImageIO)
        // The Linux decoders hand out samples as stored; converted now, there are the fewest of them.
        if configuration.decoder is ImageDecoders.Default,
            let profile = ColorProfile.embedded(in: original.data, format: header.format), !profile.isSRGB
        {
            try checkCancellation()
            report(.convertColor, request.url)
            bitmap = bitmap.convertedToSRGB(from: profile)
        }
        #endif
        let radius = request.cornerPixelRadius(atNaturalWidth: natural.width)
        if radius > 0 {
            try checkCancellation()
            report(.roundCorners, request.url)
            bitmap = bitmap.roundingCorners(radius: radius)
        }
        return bitmap
    }

    /// `bitmap` resized as ``Bitmap/resized(to:)`` does, stopping part way when `context` is cancelled;
    /// split across the cores only when `usesOtherThreads`.
    private func resized(
        _ bitmap: Bitmap, to size: PixelSize, sourceExtent: SIMD2<Double>?, _ context: ImageDecodingContext,
        _ usesOtherThreads: Bool
    ) throws(ImageDecodingError) -> Bitmap {
        configuration.resizeThreadsObserver?(usesOtherThreads)
        guard
            let resized = bitmap.resized(
                to: size, sourceExtent: sourceExtent, cancellation: context.cancellation,
                usesOtherThreads: usesOtherThreads)
        else { throw ImageDecodingError(format: context.header.format, reason: .cancelled) }
        return resized
    }

    /// The span of the picture in `bitmap`, a JPEG's decode for `context` by a decoder other than the
    /// default one, when it has the size libjpeg gives at the reduced scale `n/8` that `context` asks for
    /// and that scale pads the last column or row (the picture spans `side * n / 8` of the
    /// `ceil(side * n / 8)` pixels); `nil` otherwise, as for a decoder that does not scale.
    private func scaledJPEGExtent(of bitmap: Bitmap, _ context: ImageDecodingContext) -> SIMD2<Double>? {
        #if canImport(CJPEGSupport)
        let stored = context.header.storedSize
        guard context.header.format == .jpeg else { return nil }
        let numerator = ImageDecoders.JPEG.scaleNumerator(imageSize: stored, covering: context.minimumSize)
        guard bitmap.pixelSize == ImageDecoders.JPEG.scaledSize(stored, numerator: numerator) else { return nil }
        return ImageDecoders.JPEG.pictureExtent(stored, numerator: numerator)
        #else
        return nil
        #endif
    }

    /// The size to ask the decoder to cover for a bitmap of `minimum` (stored orientation).
    ///
    /// libwebp scales while it decodes by averaging areas (a box filter): shrunk straight to the size, a
    /// picture with alpha edges came out 22 dB from the Lanczos resize of the full image at 2 pixels wide,
    /// 28 dB at 9. A WebP for the default decoder is decoded to cover three times the size, and at least
    /// 24 pixels a side, and the resize finishes it (as Pillow's `reducing_gap` does): 35 dB and more.
    /// That is for quality only: when the larger decode would be over the pixel budget and the one at the
    /// size is not, the decoder is asked for the size, as before.
    private func decodingMinimum(_ minimum: PixelSize?, _ header: ImageHeader) -> PixelSize? {
        #if canImport(ImageIO)
        return minimum
        #else
        guard let minimum, header.format == .webp, configuration.decoder is ImageDecoders.Default else {
            return minimum
        }
        let larger = PixelSize(width: max(3 * minimum.width, 24), height: max(3 * minimum.height, 24))
        guard header.storedSize.scaledDown(toCover: larger).pixelCount <= configuration.pixelBudget else {
            return minimum
        }
        return larger
        #endif
    }

    /// A JPEG or PNG for the default decoder decoded and resized in one step, row by row; `nil` for
    /// anything else (which takes the steps one by one), and for the PNGs that only decode whole. A
    /// JPEG's resize overlaps its decode on a second thread only when `mayUseOtherCores` and a core has
    /// no decode of its own: when all are busy, the handing over would only cost.
    private func decodeResizing(
        _ data: Data, _ context: ImageDecodingContext, to size: PixelSize, url: URL, mayUseOtherCores: Bool
    ) throws(ImageDecodingError) -> Bitmap? {
        guard configuration.decoder is ImageDecoders.Default else { return nil }
        switch context.header.format {
        case .jpeg:
            #if canImport(CJPEGSupport)
            report(.resize, url)
            let overlapping =
                mayUseOtherCores && decodeSlots.busyCount < ProcessInfo.processInfo.activeProcessorCount
            configuration.resizeThreadsObserver?(overlapping)
            return try ImageDecoders.JPEG().decode(data, context: context, resizedTo: size, overlapping: overlapping)
            #else
            return nil
            #endif
        case .png:
            #if canImport(CPNG)
            // Reported once it is known to have streamed, so a PNG that decodes whole reports one resize.
            let bitmap = try ImageDecoders.PNG().decode(data, context: context, resizedTo: size)
            if bitmap != nil { report(.resize, url) }
            return bitmap
            #else
            return nil
            #endif
        default:
            return nil
        }
    }
}
