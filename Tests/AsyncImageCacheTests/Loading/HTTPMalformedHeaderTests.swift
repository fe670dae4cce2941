import Foundation
import Testing

@testable import AsyncImageCache

/// Responses whose header URLSession on Linux cannot read fail with an error that says so, rather
/// than with libcurl's words for its callback's refusal ("Failed writing header", "Out of memory" in libcurl 7;
/// "Failure writing output to destination", "A value or data field grew larger than allowed" in libcurl 8).
@Suite struct HTTPMalformedHeaderTests {
    #if canImport(FoundationNetworking)
    // Linux only: URLSession on Apple platforms reads some of these headers.
    @Test(arguments: ["no-reason", "bare-lf", "latin1", "huge", "redirected"])
    func aHeaderThatCannotBeReadFailsWithAnErrorThatSaysSoAndStoresNothing(kind: String) async throws {
        let folder = TemporaryDirectory("images")
        let (server, _) = try await TestHTTPServer.servingOneJPEG(in: folder)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        // "redirected": a redirect to a status line without a reason phrase.
        let url = server.url(
            kind == "redirected" ? "/redirect/malformed/no-reason/images/0.jpg" : "/malformed/\(kind)/images/0.jpg")
        guard let description = await store.expectNetworkErrorStoringNothing(loading: url) else { return }
        #expect(description.hasPrefix("the response header"), "\(description)")
        if kind == "huge" { #expect(description.contains("100 KB"), "\(description)") }
    }
    #endif

    @Test func theSameResponseWrittenTheRightWayLoads() async throws {
        // The route's raw bytes are otherwise a good response: only the flaw above makes the loads fail.
        let folder = TemporaryDirectory("images")
        let (server, _) = try await TestHTTPServer.servingOneJPEG(in: folder)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let image = try await store.image(
            for: ImageRequest(url: server.url("/malformed/well-formed/images/0.jpg"), targetWidth: 32))
        #expect(image.pixelSize == PixelSize(width: 32, height: 24))
    }
}
