#if os(Linux)
import CHEIF
import Foundation

@testable import AsyncImageCache

/// The libheif the tests run against, asked at run time, and what its releases since Debian 12's 1.15.1 do
/// otherwise, for the expectations that pin libheif's own behaviour: Debian 12 ships 1.15.1, Debian 13
/// 1.23.6. Where the release that made a change is not known, the flag names the one it was seen in.
enum HEIFLibrary {
    /// The installed libheif's major and minor version, as the library itself reports them.
    static let version = (major: Int(heif_get_version_number_major()), minor: Int(heif_get_version_number_minor()))

    /// Whether the installed libheif is `major`.`minor` or later.
    static func isAtLeast(_ major: Int, _ minor: Int) -> Bool {
        version.major > major || (version.major == major && version.minor >= minor)
    }

    /// libheif 1.22.0 and later refuse a coded picture whose size is not the one its item's `ispe` declares, whatever
    /// the decoding options say (pull request 1709, commits c5ae55a6 "check that decoded image size matches the
    /// claimed size" and d13e8518, which checks it before any transformation and left no way out: issue 1820).
    /// 1.15 decoded the picture as coded. So it refuses the files 1.15's own encoder wrote with the shown size as
    /// their `ispe` (cropped*.heic, the ones written with the `ispe` after a quarter turn), grid.heic (whose
    /// tiles are coded 64x64 under an `ispe` of 48x32) and every file that lies about its size.
    static var refusesAPictureOfAnotherSizeThanDeclared: Bool { isAtLeast(1, 22) }

    /// The decoder's error for such a file: libheif's `heif_suberror_Invalid_image_size`, as damage.
    static func pictureOfAnotherSizeThanDeclared(_ format: ImageFormat) -> ImageDecodingError {
        ImageDecodingError(
            format: format,
            reason: .corrupt(
                "Invalid input: Invalid image size: Decoded image does not have the size signaled in the file."))
    }

    /// libheif 1.23.5 and later refuse a coded picture of many more pixels than its `ispe` declares before they
    /// decode it, as a security limit (commit 6ce2bba, GHSA-v8qw-hwjv-44hw: "memory exhaustion through container
    /// and bitstream image size mismatch"); earlier releases from 1.22 refuse it once decoded, for its size.
    static var limitsTheCodedPictureToTheDeclaredSize: Bool {
        isAtLeast(1, 24) || (isAtLeast(1, 23) && Int(heif_get_version_number_maintenance()) >= 5)
    }

    /// libheif 1.23 (seen with 1.23.6) refuses an item with a quarter turn (`irot`) and no `ispe` as it reads the
    /// file (`heif_suberror_No_ispe_property`; HEIF asks an `ispe` of every image item); 1.15 decoded the picture
    /// as coded. A half turn without one still decodes.
    static var refusesAQuarterTurnWithoutExtent: Bool { isAtLeast(1, 23) }

    /// The decoder's error for such a file.
    static func quarterTurnWithoutExtent(_ format: ImageFormat) -> ImageDecodingError {
        ImageDecodingError(format: format, reason: .corrupt("Invalid input: Image has no 'ispe' property"))
    }

    /// libheif 1.23 (seen with 1.23.6) refuses a `grid` description of a version other than 0 (ISO/IEC 23008-12
    /// 6.6.2.3.2 defines only 0) as an unsupported feature; 1.15 read past the version.
    static var refusesGridsOfAnotherVersion: Bool { isAtLeast(1, 23) }

    /// libheif 1.23 (seen with 1.23.6) refuses, as it reads the file, an `iref` box of more than 1,000 references
    /// (a security limit); 1.15 had none.
    static var limitsReferencesToAThousand: Bool { isAtLeast(1, 23) }

    /// libheif 1.23 (seen with 1.23.6) converts YCbCr to interleaved RGB(A) otherwise than to planes of R, G and B
    /// (photo.heic: 420 of its 18,432 samples one level apart; alpha-10-bit.heic, converted to 8 bits, 9,270 up
    /// to two apart). 1.15.1's two conversions give the same samples; the planar one, which the decoder asks
    /// for, gives the same on both.
    static var convertsInterleavedRGBOtherwiseThanPlanes: Bool { isAtLeast(1, 23) }
}
#endif
