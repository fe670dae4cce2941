#if os(Linux)
import Foundation
import Testing

@testable import AsyncImageCache

extension PhotoPipelineTests {
    /// What users get from the store, measured against Pillow's Lanczos resize of the full image.
    ///
    /// The references are made by `scripts/make-reference-images` (see `Fixtures/references/README.txt`).
    @Suite("Resize quality against a Lanczos reference")
    struct ResizeQualityTests {
        /// One photo loaded at one width, and the reference it is compared with.
        struct Case: CustomTestStringConvertible, Sendable {
            let folder: String
            let name: String
            let reference: String
            let width: Int

            init(_ folder: String, _ name: String, width: Int) {
                self.folder = folder
                self.name = name
                self.width = width
                let stem = (name as NSString).deletingPathExtension
                reference = "\(stem).w\(width).png"
            }

            var testDescription: String { "\(name) at \(width)" }
        }

        static let cases = [
            Case("exif-orientation", "Landscape_1.jpg", width: 954),
            Case("exif-orientation", "Landscape_1.jpg", width: 320),
            Case("exif-orientation", "Landscape_1.jpg", width: 100),
            Case("exif-orientation", "Portrait_6.jpg", width: 320),
            Case("exif-orientation", "Portrait_6.jpg", width: 100),
            Case("jpeg", "testorig.jpg", width: 100),
            Case("references", "yellow_rose.png", width: 320),
            Case("references", "yellow_rose.png", width: 100),
        ]

        /// The quality the issue asks for.
        static let minimumPSNR = 30.0

        /// Measured here: 42-48 dB on the large photos, 43.8 dB on testorig.jpg at 100 pixels, which the store
        /// decodes at DCT scale 4/8 (114x75, of which the picture spans 113.5x74.5) before its own resize.
        /// (Resized as if the picture spanned all 114x75 pixels, it measured 31.7 dB.)
        @Test(arguments: cases)
        func theStoresResizeIsWithinThirtyDecibelsOfTheReference(_ test: Case) async throws {
            let root = TemporaryDirectory("quality")
            let store = try ImageStore.makeForTesting(root: root.url)
            let request = ImageRequest(url: Fixtures.url(test.folder, test.name), targetWidth: CGFloat(test.width))
            let image = try await store.image(for: request)
            let reference = try ImageDecoders.PNG().decode(
                try Fixtures.data("references", test.reference), context: decodingContext(.png))

            try #require(image.pixelSize == reference.pixelSize)
            let color = image.colorPSNR(against: reference)
            let alpha = image.alphaPSNR(against: reference)
            print("PSNR \(test.testDescription): colour \(Self.decibels(color)), alpha \(Self.decibels(alpha))")
            #expect(color >= Self.minimumPSNR, "colour PSNR \(Self.decibels(color))")
            #expect(alpha >= Self.minimumPSNR, "alpha PSNR \(Self.decibels(alpha))")
        }

        /// The resize kernel alone, from a full decode: what is left of the gap is rounding, so it is much
        /// smaller than the whole pipeline's (which may decode a JPEG at a reduced DCT scale first). Measured
        /// here: 56-60 dB on the JPEG photos (only the small ones run, to keep the suite light). The PNG
        /// cut-out measures about 42 dB at 100 pixels: Pillow clips premultiplied samples to 8 bits after
        /// each pass, so where Lanczos overshoots at an alpha edge its colour comes out brighter; the opaque
        /// interior still agrees to about 57 dB.
        @Test(arguments: [cases[5], cases[7]])
        func theResizeAloneFromAFullDecodeIsCloserStill(_ test: Case) throws {
            let data = try Fixtures.data(test.folder, test.name)
            let header = try ImageHeader.parse(data)
            let full = try ImageDecoders.Default().decode(data, context: ImageDecodingContext(header: header))
            let reference = try ImageDecoders.PNG().decode(
                try Fixtures.data("references", test.reference), context: decodingContext(.png))
            let resized = full.oriented(header.orientation).resized(to: reference.pixelSize)
            let color = resized.colorPSNR(against: reference)
            print("PSNR \(test.testDescription), resize alone from the full decode: colour \(Self.decibels(color))")
            #expect(color >= (test.name.hasSuffix(".png") ? 40 : 50), "colour PSNR \(Self.decibels(color))")
        }

        static func decibels(_ value: Double) -> String {
            value.isFinite ? String(format: "%.2f dB", value) : "identical"
        }
    }
}
#endif
