#if canImport(CHEIF)
import CHEIF
import Foundation

extension ImageDecoders {
    /// Decodes HEIF (HEVC, what iPhones write as HEIC) and AVIF (AV1) still images with libheif into
    /// 8-bit straight RGBA, on Linux.
    ///
    /// The primary image decodes, with its alpha plane if it has one; 10-bit images are reduced to 8
    /// bits. Neither codec has a reduced-size decode, but a file may carry thumbnails of its primary
    /// image (an iPhone's HEIC has one of about 320 pixels): the smallest that covers
    /// `context.minimumSize`, of the same shape, decodes instead. Otherwise the bitmap is the full stored
    /// size and the caller resizes.
    ///
    /// The result is in stored orientation, as from every decoder: the file's `irot` and `imir`, which
    /// the header reads as an EXIF orientation, are left to the store. Its clean aperture (`clap`), which
    /// HEIF applies in the order the properties are associated (before them in MIAF files), is applied
    /// here, measured on the picture as the properties before it left it: the picture is cropped to it,
    /// to the size the header reads; an aperture outside the picture is `.corrupt`, as libheif has it. An
    /// item with more than one `clap`, `irot` or `imir` is `.corrupt` too, refused before libheif is asked,
    /// as the libheif of Debian's 1.15.1-1+deb12u3 refuses it. A file with an aperture decodes its primary
    /// image, never a thumbnail (whose crop it does not say), and a thumbnail with an aperture of its own is
    /// passed over.
    ///
    /// The pixel budget is checked before decoding on the size the file declares (`ispe`) and on the
    /// sizes its codec streams code and its grids' and overlays' canvases (HEVC parameter sets, AV1
    /// sequence headers, `grid` and `iovl` descriptions: see `HEIFCodedSize`), which libheif allocates
    /// whatever the file declares, and on the decoded size after. The images decoded on the way to the
    /// primary image (a grid's tiles, an overlay's layers, their alpha planes), each counted as often as it
    /// is used, may add up to four times the budget (`HEIFDerivations.pixelBudgetFactor`): libheif lays a
    /// grid out by the sizes its tiles declare and decodes a tile once per use, so a tile coded larger than
    /// it declares, used a thousand times, would decode a thousand times the budget.
    ///
    /// ```swift
    /// let bitmap = try ImageDecoders.HEIF().decode(data, context: ImageDecodingContext(header: header))
    /// ```
    ///
    /// Errors: data that ends early throws ``ImageDecodingError/Reason/truncated``, a codec libheif was
    /// built without `.unsupportedFeature`, anything malformed `.corrupt` with libheif's message.
    public struct HEIF: ImageDecoding {
        /// Creates a HEIF and AVIF decoder.
        public init() {}

        /// Decodes the primary image of `data`: from a thumbnail that covers `context.minimumSize` when
        /// the file has one, else at full size.
        public func decode(_ data: Data, context: ImageDecodingContext) throws(ImageDecodingError) -> Bitmap {
            let format: ImageFormat = context.header.format == .avif ? .avif : .heif
            guard !data.isEmpty else { throw ImageDecodingError(format: format, reason: .truncated) }
            try context.checkBudget(context.header.storedSize.pixelCount, format: format)
            // What the codec streams say they code, which libheif allocates whatever the file declares.
            if let coded = HEIFCodedSize.largest(in: data) { try context.checkBudget(coded.pixelCount, format: format) }
            // libheif refuses such an item in the builds Debian ships now; earlier ones decoded it. Refused here
            // whichever is installed, so the decoder says what the header says.
            if let type = ImageHeader.heifRepeatedTransformation(in: data) {
                throw ImageDecodingError(
                    format: format, reason: .corrupt("more than one \(type) associated with the primary item"))
            }
            let cleanApertures = ImageHeader.heifCleanApertures(in: data)
            // What the images decoded on the way add up to, each as often as it is used, checked once the
            // references are known to be sound (HEIFDerivations.problem(in:)) and before libheif reads the file:
            // libheif 1.23 refuses some such files itself as it reads them (more than 1,000 references in iref),
            // which would make a refusal for their cost look like damage.
            let (limit, overflow) = context.pixelBudget.multipliedReportingOverflow(
                by: HEIFDerivations.pixelBudgetFactor)
            let decoded = HEIFDerivations.decodedPixels(in: data)
            let withinBudget = { () throws(ImageDecodingError) in
                guard let decoded, !overflow, decoded > limit else { return }
                let reason = ImageDecodingError.Reason.pixelBudgetExceeded(pixels: decoded, budget: context.pixelBudget)
                throw ImageDecodingError(format: format, reason: reason)
            }
            return try Self.withPrimaryImage(data, format: format, checkedFirst: withinBudget) {
                handle throws(ImageDecodingError) in
                // A thumbnail is there to cost less than the primary image: one whose decode would add up to more
                // (a grid of one tile used over and over), or past the limit, is passed over. Unbounded before:
                // a 15 KB file had one request decode 64 tiles of 4096x4096 for 20 s.
                let affordable = { (item: Int) -> Bool in
                    guard let pixels = HEIFDerivations.decodedPixels(in: data, item: item) else { return false }
                    return (overflow || pixels <= limit) && pixels <= decoded ?? .max
                }
                // A thumbnail shows the whole picture, so one of a cropped image would need cropping too.
                if cleanApertures.isEmpty, let minimumSize = context.minimumSize,
                    let thumbnail = Self.coveringThumbnail(of: handle, minimumSize, in: data, affordable: affordable)
                {
                    defer { heif_image_handle_release(thumbnail) }
                    // A thumbnail that fails to decode is no reason to fail: the primary image follows.
                    if let bitmap = try? Self.decodeImage(thumbnail, format: format, context, in: data) {
                        return bitmap
                    }
                }
                return try Self.decodeImage(handle, format: format, context, in: data, cleanApertures: cleanApertures)
            }
        }

        /// The smallest thumbnail of the primary image `handle` that covers `minimumSize`, has the
        /// primary image's shape and its `irot` and `imir` (the store turns the decode by the primary's; a
        /// square picture's thumbnail may be coded upright), and an alpha plane when the primary has one;
        /// `nil` when there is none. Only items `affordable` takes are looked at. iPhones store one of about
        /// 320 pixels: measured here on a 12-megapixel HEIC with one, 10 ms of CPU against 1.2 s for the photo
        /// (libde265).
        private static func coveringThumbnail(
            of handle: OpaquePointer, _ minimumSize: PixelSize, in data: Data, affordable: (Int) -> Bool
        ) -> OpaquePointer? {
            let count = Int(heif_image_handle_get_number_of_thumbnails(handle))
            guard count > 0 else { return nil }
            var ids = [heif_item_id](repeating: 0, count: count)
            let listed = Int(heif_image_handle_get_list_of_thumbnail_IDs(handle, &ids, Int32(count)))
            let primaryWidth = Double(heif_image_handle_get_ispe_width(handle))
            let primaryHeight = Double(heif_image_handle_get_ispe_height(handle))
            guard primaryWidth > 0, primaryHeight > 0 else { return nil }
            // The store turns the decode by the primary's irot and imir, and keeps its alpha.
            let primaryOrientation = ImageHeader.heifOrientation(in: data)
            let primaryHasAlpha = hasAlpha(handle)
            var best: (handle: OpaquePointer, pixels: Int)?
            for id in ids.prefix(max(0, min(listed, count))) {
                var thumbnail: OpaquePointer?
                guard heif_image_handle_get_thumbnail(handle, id, &thumbnail).code == heif_error_Ok, let thumbnail
                else { continue }
                let size = PixelSize(
                    width: Int(heif_image_handle_get_ispe_width(thumbnail)),
                    height: Int(heif_image_handle_get_ispe_height(thumbnail)))
                let sameShape =
                    size.width > 0 && size.height > 0
                    && abs(Double(size.width) / Double(size.height) / (primaryWidth / primaryHeight) - 1) < 0.02
                // A thumbnail with a clean aperture of its own is left alone (the primary image has none).
                if sameShape, size.width >= minimumSize.width, size.height >= minimumSize.height,
                    size.pixelCount < best?.pixels ?? .max,
                    ImageHeader.heifCleanApertures(in: data, item: Int(id)).isEmpty, affordable(Int(id)),
                    !primaryHasAlpha || hasAlpha(thumbnail),
                    primaryOrientation != nil,
                    ImageHeader.heifOrientation(in: data, item: Int(id)) == primaryOrientation
                {
                    if let previous = best?.handle { heif_image_handle_release(previous) }
                    best = (thumbnail, size.pixelCount)
                } else {
                    heif_image_handle_release(thumbnail)
                }
            }
            return best?.handle
        }

        /// Decodes the image `handle` in stored orientation (libheif's transformations ignored) as
        /// straight RGBA, keeping only the part `cleanApertures` show, one inside the other.
        ///
        /// The colour comes as planes of R, G and B and the alpha apart (``alphaPlane(of:decoded:size:in:data:options:format:_:)``):
        /// libheif 1.15 decodes the alpha item with the colour, with the alpha's own irot, imir and clap
        /// applied whatever the options say, and attaches it as it is. Encoders put the colour's on the alpha
        /// too (libheif's own, given an orientation or an odd size; libavif since 2025): asked for RGBA, libheif
        /// then failed ("Unsupported color conversion") or paired the picture with an alpha turned the other
        /// way. The planes it converts to before attaching anything are the same either way.
        private static func decodeImage(
            _ handle: OpaquePointer, format: ImageFormat, _ context: ImageDecodingContext, in data: Data,
            cleanApertures: [HEIFCleanAperture] = []
        ) throws(ImageDecodingError) -> Bitmap {
            // The header's size can disagree with the file's; the decoded size is what gets allocated.
            let stored = PixelSize(
                width: Int(heif_image_handle_get_ispe_width(handle)),
                height: Int(heif_image_handle_get_ispe_height(handle)))
            try context.checkBudget(stored.pixelCount, format: format)
            guard let options = heif_decoding_options_alloc() else {
                throw ImageDecodingError(format: format, reason: .corrupt("out of memory"))
            }
            defer { heif_decoding_options_free(options) }
            options.pointee.ignore_transformations = 1
            options.pointee.convert_hdr_to_8bit = 1
            options.pointee.strict_decoding = 1  // an error for damaged data, not a half-decoded image
            var image: OpaquePointer?
            try check(heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_444, options), format: format)
            guard let image else { throw ImageDecodingError(format: format, reason: .corrupt("no image")) }
            defer { heif_image_release(image) }
            let decoded = PixelSize(
                width: Int(heif_image_get_width(image, heif_channel_R)),
                height: Int(heif_image_get_height(image, heif_channel_R)))
            // A coded image larger than its declared size (ispe) is only seen here, after libheif made it.
            try context.checkBudget(decoded.pixelCount, format: format)
            guard decoded.width > 0, decoded.height > 0, let red = Plane(image, heif_channel_R, size: decoded),
                let green = Plane(image, heif_channel_G, size: decoded),
                let blue = Plane(image, heif_channel_B, size: decoded)
            else {
                throw ImageDecodingError(format: format, reason: .corrupt("libheif gave no usable RGB planes"))
            }
            let alpha = try alphaPlane(
                of: handle, decoded: image, size: decoded, in: data, options: options, format: format, context)
            defer { alpha?.image.map { heif_image_release($0) } }
            var crop = (x: 0, y: 0, width: decoded.width, height: decoded.height)
            if !cleanApertures.isEmpty {
                // The header promised the aperture's size: a crop the picture's edge cut short (the aperture
                // reaching past it, against the standard) grows back inwards, so the bitmap keeps that size.
                // An aperture after an irot or imir is measured on the turned picture, and mapped back; one after
                // another aperture on what that one left.
                let declared = PixelSize(
                    width: Int(heif_image_handle_get_ispe_width(handle)),
                    height: Int(heif_image_handle_get_ispe_height(handle)))
                // libheif refuses an aperture that leaves nothing (or a single row or column) of the picture.
                guard let shown = cleanApertures.storedCrop(in: decoded, declared: declared) else {
                    throw ImageDecodingError(
                        format: format, reason: .corrupt("the clean aperture lies outside the picture"))
                }
                crop = shown
            }
            let size = PixelSize(width: crop.width, height: crop.height)
            let eightBit = [red, green, blue].allSatisfy { $0.shift == 0 } && (alpha?.plane.shift ?? 0) == 0
            let pixels = [UInt8](unsafeUninitializedCapacity: size.pixelCount * 4) { buffer, initialized in
                var out = buffer.baseAddress!
                for y in crop.y..<(crop.y + size.height) {
                    if eightBit {
                        // The usual case, a row at a time.
                        let (r, g, b) = (red.row(y) + crop.x, green.row(y) + crop.x, blue.row(y) + crop.x)
                        let a = alpha.map { $0.plane.row(y) + crop.x }
                        for x in 0..<size.width {
                            out[0] = r[x]
                            out[1] = g[x]
                            out[2] = b[x]
                            out[3] = a?[x] ?? 255
                            out += 4
                        }
                        continue
                    }
                    for x in crop.x..<(crop.x + size.width) {
                        out[0] = red.sample(x, y)
                        out[1] = green.sample(x, y)
                        out[2] = blue.sample(x, y)
                        out[3] = alpha?.plane.sample(x, y) ?? 255
                        out += 4
                    }
                }
                initialized = size.pixelCount * 4
            }
            if alpha != nil, heif_image_handle_is_premultiplied_alpha(handle) != 0 {
                return Bitmap(width: size.width, height: size.height, premultipliedPixels: pixels)
            }
            return Bitmap(width: size.width, height: size.height, pixels: pixels)
        }

        /// One channel of a decoded image, read as 8 bits: 8-bit samples as they are, deeper ones (in 16-bit
        /// words) by their top 8 bits, as libheif's own conversion to 8 bits keeps them.
        private struct Plane {
            let base: UnsafePointer<UInt8>
            let stride: Int
            /// The bits dropped from a sample; 0 for 8-bit samples, which take a byte each.
            let shift: Int

            /// `nil` when the image has no such channel, or not of `size`.
            init?(_ image: OpaquePointer, _ channel: heif_channel, size: PixelSize) {
                guard heif_image_has_channel(image, channel) != 0,
                    Int(heif_image_get_width(image, channel)) == size.width,
                    Int(heif_image_get_height(image, channel)) == size.height
                else { return nil }
                let bits = Int(heif_image_get_bits_per_pixel_range(image, channel))
                var stride: Int32 = 0
                guard (1...16).contains(bits), let base = heif_image_get_plane_readonly(image, channel, &stride),
                    Int(stride) >= size.width * (bits > 8 ? 2 : 1)
                else { return nil }
                (self.base, self.stride, shift) = (base, Int(stride), max(0, bits - 8))
            }

            /// Row `y`'s first sample.
            @inline(__always) func row(_ y: Int) -> UnsafePointer<UInt8> { base + y * stride }

            @inline(__always) func sample(_ x: Int, _ y: Int) -> UInt8 {
                let row = base + y * stride
                guard shift > 0 else { return row[x] }
                let word = UnsafeRawPointer(row).loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self)
                return UInt8(truncatingIfNeeded: word >> UInt16(shift))
            }
        }

        /// The alpha plane of `handle`'s image, `decoded` its colour (of `size`), in the colour's stored orientation;
        /// `nil` for an opaque image. With the image that holds the plane when it was decoded here, for
        /// the caller to release.
        ///
        /// The alpha item's own (an auxiliary image of `handle` that libheif takes for alpha, listed even
        /// where libheif dropped it: it does when the alpha's displayed size is not the colour's, an irot
        /// on the colour only, and then says the image has none). What libheif attached when that item has
        /// no irot, imir or clap of its own; else the item decoded alone, its transformations ignored too.
        /// Without such an item, what libheif attached (a grid whose tiles carry alpha).
        private static func alphaPlane(
            of handle: OpaquePointer, decoded image: OpaquePointer, size: PixelSize, in data: Data,
            options: UnsafeMutablePointer<heif_decoding_options>, format: ImageFormat, _ context: ImageDecodingContext
        ) throws(ImageDecodingError) -> (plane: Plane, image: OpaquePointer?)? {
            guard let (item, alphaHandle) = alphaItem(of: handle) else {
                return Plane(image, heif_channel_Alpha, size: size).map { ($0, nil) }
            }
            defer { heif_image_handle_release(alphaHandle) }
            let orientation = ImageHeader.heifOrientation(in: data, item: item)
            if orientation == .up, ImageHeader.heifCleanApertures(in: data, item: item).isEmpty,
                let attached = Plane(image, heif_channel_Alpha, size: size)
            {
                return (attached, nil)
            }
            try context.checkBudget(
                Int(heif_image_handle_get_ispe_width(alphaHandle))
                    * Int(heif_image_handle_get_ispe_height(alphaHandle)),
                format: format)
            var alphaImage: OpaquePointer?
            try check(
                heif_decode_image(alphaHandle, &alphaImage, heif_colorspace_undefined, heif_chroma_undefined, options),
                format: format)
            guard let alphaImage else { throw ImageDecodingError(format: format, reason: .corrupt("no alpha image")) }
            // Monochrome as coded; a grid of alpha tiles comes as RGB, its R the plane libheif would attach.
            let channel = heif_image_has_channel(alphaImage, heif_channel_Y) != 0 ? heif_channel_Y : heif_channel_R
            guard let plane = Plane(alphaImage, channel, size: size) else {
                let alpha = PixelSize(
                    width: Int(heif_image_get_width(alphaImage, channel)),
                    height: Int(heif_image_get_height(alphaImage, channel)))
                heif_image_release(alphaImage)
                throw ImageDecodingError(
                    format: format, reason: .corrupt("the alpha plane is \(alpha), the picture \(size)"))
            }
            return (plane, alphaImage)
        }

        /// The item id and handle (for the caller to release) of the first auxiliary image of `handle` that
        /// libheif 1.15 takes for alpha (``HEIFBoxes/alphaAuxiliaryTypes``); `nil` when there is none.
        private static func alphaItem(of handle: OpaquePointer) -> (item: Int, handle: OpaquePointer)? {
            let count = Int(heif_image_handle_get_number_of_auxiliary_images(handle, 0))
            guard count > 0 else { return nil }
            var ids = [heif_item_id](repeating: 0, count: count)
            let listed = Int(heif_image_handle_get_list_of_auxiliary_image_IDs(handle, 0, &ids, Int32(count)))
            for id in ids.prefix(max(0, min(listed, count))) {
                var auxiliary: OpaquePointer?
                guard heif_image_handle_get_auxiliary_image_handle(handle, id, &auxiliary).code == heif_error_Ok,
                    let auxiliary
                else { continue }
                var type: UnsafePointer<CChar>?
                let isAlpha =
                    heif_image_handle_get_auxiliary_type(auxiliary, &type).code == heif_error_Ok
                    && type.map { HEIFBoxes.alphaAuxiliaryTypes.contains(String(cString: $0)) } == true
                if type != nil { heif_image_handle_free_auxiliary_types(auxiliary, &type) }
                if isAlpha { return (Int(id), auxiliary) }
                heif_image_handle_release(auxiliary)
            }
            return nil
        }

        /// Whether the image `handle` has an alpha plane: libheif says none for one whose alpha item it
        /// dropped (see ``alphaPlane(of:decoded:size:in:data:options:format:_:)``), which the decode reads all the same.
        private static func hasAlpha(_ handle: OpaquePointer) -> Bool {
            if heif_image_handle_has_alpha_channel(handle) != 0 { return true }
            guard let (_, alpha) = alphaItem(of: handle) else { return false }
            heif_image_handle_release(alpha)
            return true
        }

        /// The raw ICC profile of the primary image of `data` (`prof` or `rICC` colour information);
        /// `nil` when it has none, only `nclx` colour information, or libheif cannot read the file.
        static func iccProfile(in data: Data, format: ImageFormat) -> Data? {
            (try? withPrimaryImage(data, format: format) { handle throws(ImageDecodingError) in rawICCProfile(handle) })
                ?? nil
        }

        /// The colour profile of the primary image of `data`: its ICC profile, else what its `nclx` colour
        /// description says when that is primaries with sRGB's transfer (or an unspecified one, which
        /// AVIF encoders write for sRGB), linear light or a power of 2.2; `nil` for other transfers (HDR's
        /// PQ and HLG, video's BT.709 and BT.601), which leave the pixels as decoded.
        static func colorProfile(in data: Data, format: ImageFormat) -> ColorProfile? {
            (try? withPrimaryImage(data, format: format) { handle throws(ImageDecodingError) -> ColorProfile? in
                if let icc = rawICCProfile(handle) { return ColorProfile(iccData: icc) }
                return nclxProfile(handle)
            }) ?? nil
        }

        private static func rawICCProfile(_ handle: OpaquePointer) -> Data? {
            let type = heif_image_handle_get_color_profile_type(handle)
            guard type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC else { return nil }
            let size = heif_image_handle_get_raw_color_profile_size(handle)
            guard size > 0, size <= ColorProfile.largestProfile else { return nil }
            var profile = Data(count: size)
            let error = profile.withUnsafeMutableBytes {
                heif_image_handle_get_raw_color_profile(handle, $0.baseAddress)
            }
            return error.code == heif_error_Ok ? profile : nil
        }

        private static func nclxProfile(_ handle: OpaquePointer) -> ColorProfile? {
            var description: UnsafeMutablePointer<heif_color_profile_nclx>?
            guard heif_image_handle_get_nclx_color_profile(handle, &description).code == heif_error_Ok,
                let nclx = description?.pointee
            else { return nil }
            defer { heif_nclx_color_profile_free(description) }
            let curve: ToneCurve
            switch nclx.transfer_characteristics.rawValue {
            case 2, 13: curve = .sRGB
            case 4: curve = .gamma(2.2)
            case 8: curve = .gamma(1)
            default: return nil
            }
            // libheif fills in the chromaticities of the primaries it knows; unspecified ones come as
            // zeros, which make no profile: such a file stays as decoded, that is, sRGB.
            func point(_ x: Float, _ y: Float) -> (Double, Double) { (Double(x), Double(y)) }
            return ColorProfile(
                red: point(nclx.color_primary_red_x, nclx.color_primary_red_y),
                green: point(nclx.color_primary_green_x, nclx.color_primary_green_y),
                blue: point(nclx.color_primary_blue_x, nclx.color_primary_blue_y),
                white: point(nclx.color_primary_white_x, nclx.color_primary_white_y), curve: curve)
        }

        /// libheif is set up once per process (its plugins, where it has them).
        private static let initialized: Bool = heif_init(nil).code == heif_error_Ok

        /// Reads the file's boxes from `data` (not copied) and runs `body` with its primary image; `checkedFirst`
        /// runs before libheif reads a byte, once the file's references are known to be sound.
        private static func withPrimaryImage<T>(
            _ data: Data, format: ImageFormat, checkedFirst: () throws(ImageDecodingError) -> Void = {},
            _ body: (OpaquePointer) throws(ImageDecodingError) -> T
        ) throws(ImageDecodingError) -> T {
            // What would abort or hang libheif is refused before it reads a byte.
            if let problem = HEIFDerivations.problem(in: data) {
                throw ImageDecodingError(format: format, reason: .corrupt(problem))
            }
            // libheif 1.15 refuses a meta of size 0, which runs to the end of the file ("No 'meta' box"); 1.23 reads
            // it. The header calls it corrupt, and so the decoder does, whichever libheif is installed.
            if HEIFBoxes(bytes: HeaderBytes(data, format: format)).metaRunsToTheEnd() {
                throw ImageDecodingError(format: format, reason: .corrupt(HEIFBoxes.metaOfSizeZero))
            }
            try checkedFirst()
            return try data.withUnsafeBytes { bytes in
                Result { () throws(ImageDecodingError) in try withPrimaryImage(bytes, of: data, format: format, body) }
            }.get()
        }

        private static func withPrimaryImage<T>(
            _ bytes: UnsafeRawBufferPointer, of data: Data, format: ImageFormat,
            _ body: (OpaquePointer) throws(ImageDecodingError) -> T
        ) throws(ImageDecodingError) -> T {
            guard initialized, let base = bytes.baseAddress, let context = heif_context_alloc() else {
                throw ImageDecodingError(format: format, reason: .corrupt("libheif could not start"))
            }
            defer { heif_context_free(context) }
            // A grid's tiles decode on the calling thread (0; 1 would start one thread of libheif's for
            // them): the store runs a decode per core already. More threads would shorten a lone decode,
            // but libheif 1.15 then sometimes gives different pixels for a tile (seen on grid.heic with 2:
            // a race inside one context; separate contexts decoding at once, as the store's do, agree).
            heif_context_set_max_decoding_threads(context, 0)
            let read = heif_context_read_from_memory_without_copy(context, base, bytes.count, nil)
            if read.code != heif_error_Ok {
                // Reading the file, libheif takes in its top-level boxes up to the end of meta, and the header reader
                // has the last word on them. Bytes that end before that are a download cut short, `.truncated`,
                // whatever libheif reports: libheif 1.15 drops the box they end in and names what is then missing
                // ("No 'ftyp' box", "No 'meta' box"), 1.23 says "File size too small" or "Insufficient input data".
                // A damaged box header there is `.corrupt`, where 1.23 reports the end of the data.
                switch HEIFBoxes(bytes: HeaderBytes(data, format: format)).topLevelBoxes() {
                case .endBeforeMeta: throw ImageDecodingError(format: format, reason: .truncated)
                case .damagedBeforeMeta: try check(read, format: format, endOfDataIsTruncation: false)
                case .throughMeta: try check(read, format: format)
                }
            }
            var handle: OpaquePointer?
            try check(heif_context_get_primary_image_handle(context, &handle), format: format)
            guard let handle else { throw ImageDecodingError(format: format, reason: .corrupt("no primary image")) }
            defer { heif_image_handle_release(handle) }
            return try body(handle)
        }

        /// Throws the error libheif reported, if any: with `endOfDataIsTruncation`, its "end of data" as `.truncated`.
        private static func check(
            _ error: heif_error, format: ImageFormat, endOfDataIsTruncation: Bool = true
        ) throws(ImageDecodingError) {
            guard error.code != heif_error_Ok else { return }
            // libheif 1.23 ends some messages with a line break ("... exceeds the maximum image size 65536\n"): an
            // error is one line.
            let message =
                error.message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
                ?? "libheif failed"
            if error.subcode == heif_suberror_End_of_data, endOfDataIsTruncation {
                throw ImageDecodingError(format: format, reason: .truncated)
            }
            switch error.code {
            case heif_error_Unsupported_feature, heif_error_Unsupported_filetype:
                throw ImageDecodingError(format: format, reason: .unsupportedFeature(message))
            default:
                throw ImageDecodingError(format: format, reason: .corrupt(message))
            }
        }
    }
}
#endif
