import Foundation
import Testing

@testable import AsyncImageCache

/// A download waiting for its host's place starts at once when a cancelled download frees it. On Linux with
/// libcurl 8 (Debian 13), a download started while libcurl still closed the cancelled one's connection was
/// left pending inside libcurl, never sent, until it timed out: every other round of the loops below, where
/// libcurl 7 (Debian 12) sent each one.
@Suite struct HTTPDataLoaderFreedConnectionTests {
    enum Cancellation: String, CaseIterable, Sendable {
        /// The caller cancels the download while the server holds back its response.
        case byTheCaller
        /// The loader refuses a body the server encoded though it was not asked to (gzip), and cancels it.
        case refusedEncoding
    }

    @Test(arguments: Cancellation.allCases)
    func aDownloadWaitingForTheConnectionACancelledOneFreesIsSent(_ cancellation: Cancellation) async throws {
        let folder = TemporaryDirectory("images")
        let (server, image) = try await TestHTTPServer.servingOneJPEG(in: folder)
        defer { server.stop() }
        // One download of the host at a time. A round takes milliseconds when it goes well; the timeout is
        // still long enough for the held download to wait through a round's steps on a machine the rest of
        // the suite keeps busy (at 5 seconds, it once timed out there before the second download queued).
        let loader = HTTPDataLoader.limited(connectionsPerHost: 1, timeout: 20)
        for round in 0..<20 {
            let key = "round\(round)"
            let held =
                cancellation == .byTheCaller ? "/held/\(key)/images/0.jpg" : "/held/\(key)/gzip-zeros/200/1"
            let first = Task { try await loader.loadData(for: server.url(held)) }
            try await waitUntil { try await server.hits(for: held) == 1 }
            let waiting = server.url("/images/0.jpg?\(round)")
            let second = Task { try await loader.loadData(for: waiting) }
            try await waitUntil { loader.waitingTaskCount == 1 }
            if cancellation == .byTheCaller {
                first.cancel()
                await #expect(throws: ImageLoadingError.cancelled) { try await first.value }
            } else {
                try await server.release(key)
                await #expect(throws: ImageLoadingError.self) { try await first.value }
            }
            let result: Result<Data, any Error>
            do {
                result = .success(try await second.value)
            } catch {
                result = .failure(error)
            }
            // The next round starts at once, as the loop that found this did: one timeout says it.
            guard case .success(let data) = result else {
                Issue.record("round \(round): \(result)")
                return
            }
            #expect(data == image)
        }
        #expect(try await server.hits(for: "/images/0.jpg") == 20)
        for round in 0..<20 { try await server.release("round\(round)") }  // held requests end on the server too
    }
}
