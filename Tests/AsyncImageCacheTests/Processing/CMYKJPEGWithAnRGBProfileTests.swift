import Foundation
import Testing

@testable import AsyncImageCache

#if os(Linux)
/// A CMYK JPEG that carries an RGB profile (an editor converted an RGB photo to CMYK and kept its
/// profile): the profile describes other samples than the file's, so it is passed over, as
/// Chromium passes it over (it drops any profile of another colour space than a CMYK or YCCK
/// JPEG's), and as littleCMS refuses to build the transform. The decoder's output, already sRGB
/// (multiplied out here), must not be converted again as though it were in the RGB profile's space.
@Suite("A CMYK JPEG with an RGB profile")
struct CMYKJPEGWithAnRGBProfileTests {
    @Test func anRGBProfileDoesNotCountForACMYKJPEG() throws {
        let tagged = SyntheticICC.embedding(SyntheticICC.displayP3(), inJPEG: try Fixtures.data("cmyk", "patches.jpg"))
        #expect(ColorProfile.embeddedICCData(in: tagged, format: .jpeg) == SyntheticICC.displayP3())
        #expect(ColorProfile.embedded(in: tagged, format: .jpeg) == nil)
    }

    @Test func theStoreLeavesACMYKJPEGWithAnRGBProfileAsItsInkGives() async throws {
        let plain = try Fixtures.data("cmyk", "patches.jpg")
        let folder = TemporaryDirectory("cmyk-rgb-profile")
        let files = [
            ("plain.jpg", plain), ("p3.jpg", SyntheticICC.embedding(SyntheticICC.displayP3(), inJPEG: plain)),
        ]
        for (name, data) in files { try data.write(to: folder.url.appendingPathComponent(name)) }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        func image(_ name: String) async throws -> Bitmap {
            try await store.image(for: ImageRequest(url: folder.url.appendingPathComponent(name)))
        }
        let expected = try await image("plain.jpg")
        let tagged = try await image("p3.jpg")
        let differences = zip(expected.pixels, tagged.pixels).map { abs(Int($0) - Int($1)) }
        let largest = differences.max() ?? 0
        let worst = (differences.firstIndex(of: largest) ?? 0) / 4
        let (x, y) = (worst % expected.width, worst / expected.width)
        // Before the fix: 55 of 255, and many samples moved (converted a second time as Display P3).
        #expect(
            largest == 0,
            "\(differences.filter { $0 > 0 }.count) samples changed, up to \(largest): \(expected.pixel(x: x, y: y)) became \(tagged.pixel(x: x, y: y)) at (\(x), \(y))"
        )
    }
}
#endif
