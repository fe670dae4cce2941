import Foundation
import Testing

/// `aic demo` where the environment names an HTTP proxy, as on many company machines and CI runners.
@Suite struct CLIDemoProxyTests {
    /// libcurl (URLSession on Linux) sent the demo's requests for its own loopback server through the
    /// proxy in `http_proxy`, which cannot reach it: the demo failed at its first image ("network error
    /// loading http://127.0.0.1:PORT/photo-large.jpg"). A server that answers every request stands in for
    /// the proxy here (it answers 404 to a proxied request), so the failure does not depend on a port
    /// where nothing listens.
    @Test func theDemoReachesItsLoopbackServerWhenTheEnvironmentNamesAProxy() async throws {
        let aic = CommandLineRunner()
        let proxy = try await aic.serve([:])
        defer { proxy.stop() }
        let temporary = aic.workspace.url.appendingPathComponent("tmp", isDirectory: true)
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)

        let result = try await aic.run(
            ["demo", "--output", "sheet.png"],
            environment: [
                "TMPDIR": temporary.path, "http_proxy": proxy.url("/").absoluteString, "no_proxy": nil, "NO_PROXY": nil,
            ])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("http 6"), "the cold pass fetched the six samples: \(result)")
        #expect(FileManager.default.fileExists(atPath: aic.file("sheet.png").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty)
    }
}
