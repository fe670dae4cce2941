import Foundation
import XCTest

@testable import AsyncImageCache

/// Main-thread behaviour. These are XCTest cases on purpose: under XCTest, `wait(for:)` runs the
/// main run loop on the main thread, which is what an app does; Swift Testing drains the main queue
/// on another thread, so `Thread.isMainThread` would say nothing there.
final class ImageStoreMainThreadTests: XCTestCase {
    func testCompletionsRunOnTheMainThreadForSuccessAndFailure() throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs([PixelSize(width: 300, height: 200)], into: folder.url)
        let server = try TestHTTPServer(blockingUntilListening: folder.url)
        defer { server.stop() }
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        let paths = ["/images/0.jpg", "/status/404", "/html-as-jpeg", "/truncated/images/0.jpg"]
        let results = LockedBox([String: [Bool]]())
        var expectations: [XCTestExpectation] = []
        for path in paths {
            let done = expectation(description: path)
            expectations.append(done)
            store.load(ImageRequest(url: server.url(path), targetWidth: 100)) { image in
                XCTAssertTrue(Thread.isMainThread, "\(path) completed off the main thread")
                results.withLock { $0[path, default: []].append(image != nil) }
                done.fulfill()
            }
        }
        wait(for: expectations, timeout: 20)
        // Let any second (wrong) call arrive before counting.
        RunLoop.main.run(until: Date().addingTimeInterval(0.2))
        let outcomes = results.withLock { $0 }
        XCTAssertEqual(outcomes["/images/0.jpg"], [true])
        XCTAssertEqual(outcomes["/status/404"], [false])
        XCTAssertEqual(outcomes["/html-as-jpeg"], [false])
        XCTAssertEqual(outcomes["/truncated/images/0.jpg"], [false])
        store.waitForDiskMaintenance()
        XCTAssertEqual(store.diskFileNames.count, 1)  // only the good image
    }

    func testNoFetchDecodeResizeOrCornerRoundingRunsOnTheMainThread() throws {
        let folder = TemporaryDirectory("images")
        try SampleImages.writeJPEGs(
            [PixelSize(width: 640, height: 480), PixelSize(width: 480, height: 640)], into: folder.url)
        let server = try TestHTTPServer(blockingUntilListening: folder.url)
        defer { server.stop() }
        let stages = LockedBox([(ImageStore.Stage, Bool)]())
        let store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.stageObserver = { stage, _ in stages.withLock { $0.append((stage, Thread.isMainThread)) } }
        }
        var expectations: [XCTestExpectation] = []
        let urls = [
            server.url("/images/0.jpg"), server.url("/images/1.jpg"), folder.url.appendingPathComponent("0.jpg"),
        ]
        for url in urls {
            let done = expectation(description: url.absoluteString)
            expectations.append(done)
            store.load(ImageRequest(url: url, targetWidth: 101, cornerRadius: 12)) { image in
                XCTAssertNotNil(image)
                done.fulfill()
            }
        }
        wait(for: expectations, timeout: 20)
        let recorded = stages.withLock { $0 }
        XCTAssertEqual(Set(recorded.map(\.0)), [.fetch, .decode, .resize, .roundCorners])
        XCTAssertEqual(recorded.filter { $0.0 == .fetch }.count, 3)
        XCTAssertFalse(recorded.contains { $0.1 }, "stages on the main thread: \(recorded.filter { $0.1 }.map(\.0))")
    }
}
