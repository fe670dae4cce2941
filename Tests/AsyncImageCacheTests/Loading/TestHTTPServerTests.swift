import Foundation
import Testing

@testable import AsyncImageCache

/// The test server itself: counters, reset and shutdown, which the other suites rely on.
@Suite struct TestHTTPServerTests {
    let directory = TemporaryDirectory("server")

    @Test func countsHitsPerPathAndResets() async throws {
        try Data("x".utf8).write(to: directory.url.appendingPathComponent("a.png"))
        let server = try TestHTTPServer(serving: directory.url)
        let loader = HTTPDataLoader()
        _ = try await loader.loadData(for: server.url("/images/a.png"))
        _ = try await loader.loadData(for: server.url("/images/a.png?v=2"))
        #expect(try await server.hits() == ["/images/a.png": 2])
        try await server.reset()
        #expect(try await server.hits().isEmpty)
        #expect(try await server.bytesSent(for: "/oversized/10") == nil)
    }

    @Test func serversRunSideBySideOnTheirOwnPorts() throws {
        let first = try TestHTTPServer(serving: directory.url)
        let second = try TestHTTPServer(serving: directory.url)
        #expect(first.port != second.port)
    }

    @Test func stopEndsTheServerAndCanBeCalledTwice() async throws {
        let server = try TestHTTPServer(serving: directory.url)
        server.stop()
        server.stop()
        await #expect(throws: (any Error).self) { try await server.hits() }
    }

    @Test func theServerExitsWhenItsStdinCloses() throws {
        // The same script, started by hand, so closing stdin is the only signal it gets.
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", TestHTTPServer.script.path, directory.url.path]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        _ = output.fileHandleForReading.availableData  // the port line: it is listening
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
