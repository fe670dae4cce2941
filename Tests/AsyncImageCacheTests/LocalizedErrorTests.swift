import Foundation
import Testing

@testable import AsyncImageCache

/// `localizedDescription`, what UI code shows, says what went wrong.
@Suite struct LocalizedErrorTests {
    @Test func aFailedLoadsLocalizedDescriptionIsItsDescription() async throws {
        let root = TemporaryDirectory("root")
        let store = try ImageStore.makeForTesting(root: root.url)
        let missing = root.url.appendingPathComponent("missing.jpg")
        do {
            _ = try await store.image(for: ImageRequest(url: missing))
            Issue.record("a missing file loaded")
        } catch {
            #expect(error.localizedDescription == error.description)
            #expect(error.localizedDescription.contains("missing.jpg"))
        }
    }

    @Test func decodingAndConfigurationErrorsToo() {
        let decoding: any Error = ImageDecodingError(format: .png, reason: .truncated)
        #expect(decoding.localizedDescription == "\(decoding)")
        let configuration: any Error = ImageStore.ConfigurationError.invalidName("a/b")
        #expect(configuration.localizedDescription.contains("a/b"))
    }
}
