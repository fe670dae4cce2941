import Foundation

@testable import AsyncImageCache

/// `count` small JPEGs, a request for each, and a store with one decode slot whose decoder
/// waits at a gate, with a log of the stages.
struct OneGatedSlot {
    let folder = TemporaryDirectory("slots")
    let requests: [ImageRequest]
    let gate: GatedDecoder
    let log: StageLog
    let store: ImageStore

    init(count: Int) throws {
        let names = try SampleImages.writeJPEGs(
            Array(repeating: PixelSize(width: 200, height: 100), count: count), into: folder.url)
        requests = names.map { [folder] in ImageRequest(url: folder.url.appendingPathComponent($0), targetWidth: 50)
        }
        let (gate, log) = (GatedDecoder(), StageLog())
        (self.gate, self.log) = (gate, log)
        store = try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache")) {
            $0.decoder = gate
            $0.decodeConcurrency = 1
            $0.stageObserver = log.observer
        }
    }
}
