import Foundation
import Spawn
import Testing

@testable import AsyncImageCache

/// The test server itself: counters, reset and shutdown, which the other suites rely on.
@Suite struct TestHTTPServerTests {
    let directory = TemporaryDirectory("server")

    @Test func countsHitsPerPathAndResets() async throws {
        try Data("x".utf8).write(to: directory.url.appendingPathComponent("a.png"))
        let server = try await TestHTTPServer(serving: directory.url)
        let loader = HTTPDataLoader()
        _ = try await loader.loadData(for: server.url("/images/a.png"))
        _ = try await loader.loadData(for: server.url("/images/a.png?v=2"))
        #expect(try await server.hits() == ["/images/a.png": 2])
        try await server.reset()
        #expect(try await server.hits().isEmpty)
        #expect(try await server.bytesSent(for: "/oversized/10") == nil)
    }

    @Test func serversRunSideBySideOnTheirOwnPorts() async throws {
        let first = try await TestHTTPServer(serving: directory.url)
        let second = try await TestHTTPServer(serving: directory.url)
        #expect(first.port != second.port)
    }

    @Test func stopEndsTheServerAndCanBeCalledTwice() async throws {
        let server = try await TestHTTPServer(serving: directory.url)
        server.stop()
        server.stop()
        await #expect(throws: (any Error).self) { try await server.hits() }
    }

    @Test func theServerExitsWhenItsStdinCloses() throws {
        // The same script, started by hand, so closing stdin is the only signal it gets.
        let (child, input, output) = try ChildProcess.start(["python3", TestHTTPServer.script.path, directory.url.path])
        #expect(Int(TestHTTPServer.firstLine(from: output)) != nil)  // the port: it is listening
        close(input)
        #expect(child.waitForExit() == 0)  // exited, with status 0
    }

    @Test func theServerClosesWhatItInheritsBesidesItsStandardStreams() throws {
        // A pipe whose write end the server inherits (made without close-on-exec), as another test's
        // child's pipes and Foundation's exit socket can leak into it: once this process closes its own
        // copy, the reader sees the end only if the server closed the copy it inherited.
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let (reading, writing) = (ends[0], ends[1])
        defer { close(reading) }
        let (child, input, output) = try ChildProcess.start(
            ["python3", "-S", TestHTTPServer.script.path, directory.url.path])
        defer {
            close(input)
            child.terminateAndWait()
        }
        // The port: listening, past the start-up that closes what it inherited.
        #expect(Int(TestHTTPServer.firstLine(from: output)) != nil)
        close(writing)
        var ready = pollfd(fd: reading, events: Int16(POLLIN), revents: 0)
        try #require(poll(&ready, 1, 30_000) == 1, "the server kept the pipe's write end")
        var byte: UInt8 = 0
        #expect(read(reading, &byte, 1) == 0)  // the end of the pipe, not a byte
    }
}
