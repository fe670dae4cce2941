import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import AsyncImageCache

/// What a revalidation through a redirect sends: validators belong to the response the URL led to last
/// time. Only a permanent redirect that may be kept is taken to lead there again; through another, the
/// entity tag still goes (only the same bytes match it), the date does not (it means nothing across
/// files).
@Suite(.timeLimit(.minutes(3))) struct HTTPRedirectValidatorTests {
    let directory = TemporaryDirectory("http-redirect-validators")
    let server: TestHTTPServer
    let imageBytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })
    let otherBytes = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })

    init() async throws {
        try imageBytes.write(to: directory.url.appendingPathComponent("photo.jpg"))
        try otherBytes.write(to: directory.url.appendingPathComponent("other.jpg"))
        server = try await TestHTTPServer(serving: directory.url)
    }

    private func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    @Test func aRevalidationThroughARedirectWhoseTargetChangedGetsTheNewImage() async throws {
        // /avatar -> 302 no-cache -> photo.jpg (Last-Modified only); then the avatar becomes other.jpg,
        // a file older than photo.jpg. Before, the revalidation sent photo.jpg's If-Modified-Since on to
        // other.jpg, whose 304 kept photo.jpg's bytes for the avatar (for ever: each revalidation the same).
        let first = "/cache-lm/max-age=31536000/images/photo.jpg"
        let then = "/cache-lm/max-age=31536000/images/other.jpg"
        let url = server.url("/redirect-then/302/no-cache?\(escaped(first))&\(escaped(then))")
        let policy = try await expectRevalidationGetsTheOlderImage(url, servedAt: then)
        #expect(policy?.maxAge == 0)
    }

    @Test func aURLThatStopsRedirectingIsNotSentTheDateOfWhereItLed() async throws {
        // /avatar -> 302 -> photo.jpg (Last-Modified only); then /avatar serves other.jpg itself. Before,
        // photo.jpg's date went to /avatar as If-Modified-Since, and other.jpg's 304 kept photo.jpg's bytes.
        let first = "/cache-lm/max-age=31536000/images/photo.jpg"
        let own = "/cache-lm/max-age=31536000/images/other.jpg"
        _ = try await expectRevalidationGetsTheOlderImage(
            server.url("/redirect-once/302\(own)?\(escaped(first))"), servedAt: own)
    }

    /// Loads `url`, which leads to photo.jpg (dated a minute ago) the first time, then revalidates it once
    /// it shows other.jpg (dated two hours ago), served at `path`: only a whole response gives the new
    /// image, as an older file's `304` would keep photo.jpg's bytes. Returns the first load's policy.
    private func expectRevalidationGetsTheOlderImage(
        _ url: URL, servedAt path: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HTTPCachePolicy? {
        let now = Date()
        for (name, age) in [("other.jpg", 7200.0), ("photo.jpg", 60)] {
            try FileManager.default.setAttributes(
                [.modificationDate: now.addingTimeInterval(-age)],
                ofItemAtPath: directory.url.appendingPathComponent(name).path)
        }
        let loader = HTTPDataLoader()
        guard case .modified(let body, let policy) = try await loader.loadData(for: url, revalidating: nil) else {
            Issue.record("first load not a 200", sourceLocation: sourceLocation)
            return nil
        }
        #expect(body == imageBytes, sourceLocation: sourceLocation)
        switch try await loader.loadData(for: url, revalidating: policy) {
        case .modified(let body, _):
            #expect(body == otherBytes, sourceLocation: sourceLocation)
        case .notModified:
            Issue.record("other.jpg's 304 confirmed photo.jpg's bytes for the URL", sourceLocation: sourceLocation)
        }
        #expect(try await server.statuses(for: path) == [200], sourceLocation: sourceLocation)
        return policy
    }

    @Test func aTemporaryRedirectKeepsTheEntityTag() async throws {
        // The same bytes behind the redirect: a 304, as before; changed bytes under their own tag: a 200.
        let first = "/cache/max-age=31536000/images/photo.jpg"
        let then = "/cache/max-age=31536000/images/other.jpg"
        let url = server.url("/redirect-then/302/no-cache?\(escaped(first))&\(escaped(first))")
        let loader = HTTPDataLoader()
        guard case .modified(_, let policy) = try await loader.loadData(for: url, revalidating: nil) else {
            Issue.record("first load not a 200")
            return
        }
        #expect(policy.entityTag != nil)
        guard case .notModified = try await loader.loadData(for: url, revalidating: policy) else {
            Issue.record("no 304 through the 302 to the same image")
            return
        }
        #expect(try await server.statuses(for: first) == [200, 304])
        let moved = server.url("/redirect-then/302/no-cache?\(escaped(first))&\(escaped(then))")
        guard case .modified(_, let movedPolicy) = try await loader.loadData(for: moved, revalidating: nil) else {
            Issue.record("first load not a 200")
            return
        }
        guard case .modified(let body, _) = try await loader.loadData(for: moved, revalidating: movedPolicy) else {
            Issue.record("other.jpg answered photo.jpg's entity tag with a 304")
            return
        }
        #expect(body == otherBytes)
    }

    @Test func aPermanentRedirectKeepsTheValidators() async throws {
        let final = "/cache/max-age=0/images/photo.jpg"
        let url = server.url("/redirect-cache/301/-\(final)")
        let loader = HTTPDataLoader()
        guard case .modified(_, let policy) = try await loader.loadData(for: url, revalidating: nil) else {
            Issue.record("first load not a 200")
            return
        }
        guard case .notModified = try await loader.loadData(for: url, revalidating: policy) else {
            Issue.record("no 304 through a 301")
            return
        }
        #expect(try await server.statuses(for: final) == [200, 304])
    }
}
