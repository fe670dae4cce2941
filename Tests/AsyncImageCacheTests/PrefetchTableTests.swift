import Foundation
import Testing

@testable import AsyncImageCache

/// The line of waiting prefetches: first put in line, first started, and a request stopped and
/// put in line again waits behind those already there.
@Suite struct PrefetchTableTests {
    private func request(_ number: Int) -> ImageRequest {
        ImageRequest(url: URL(string: "https://images.example.com/\(number).jpg")!, targetWidth: 100)
    }

    private func drain(_ table: inout PrefetchTable) -> [ImageRequest] {
        var taken: [ImageRequest] = []
        while let next = table.nextWaiting() { taken.append(next) }
        return taken
    }

    @Test func aRequestStoppedAndStartedAgainWaitsBehindTheOthers() {
        var table = PrefetchTable()
        for number in 0..<3 { table.enqueue(request(number)) }
        table.removeWaiting(request(0))
        table.enqueue(request(0))
        #expect(drain(&table) == [request(1), request(2), request(0)])
    }

    @Test func aSourceWithoutRoomIsPassedOverAndKeepsItsPlace() {
        var table = PrefetchTable()
        for number in 0..<4 { table.enqueue(request(number), source: number.isMultiple(of: 2) ? "stalled" : "other") }
        let full: (String) -> Bool = { $0 != "stalled" }
        #expect(table.nextWaiting(where: full)?.request == request(1))
        #expect(table.nextWaiting(where: full)?.request == request(3))
        #expect(table.nextWaiting(where: full) == nil)
        #expect(table.lineLength == 2)
        #expect(drain(&table) == [request(0), request(2)])
    }

    @Test func aLongRandomRunMatchesAPlainOrderedList() {
        var generator = SystemRandomNumberGenerator()
        var table = PrefetchTable()
        var model: [ImageRequest] = []
        for _ in 0..<20_000 {
            let chosen = request(Int.random(in: 0..<40, using: &generator))
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<5:
                table.enqueue(chosen)
                if !model.contains(chosen) { model.append(chosen) }
                // Stopped requests passed over are dropped once they are most of the line.
                #expect(table.lineLength <= 2 * model.count + 32)
            case 5..<8:
                table.removeWaiting(chosen)
                model.removeAll { $0 == chosen }
            default:
                #expect(table.nextWaiting() == (model.isEmpty ? nil : model.removeFirst()))
            }
        }
        #expect(drain(&table) == model)
    }
}
