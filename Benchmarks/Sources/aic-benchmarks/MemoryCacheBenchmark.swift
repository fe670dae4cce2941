import AsyncImageCache
import Foundation

/// Insert and hit cost of the memory tier at 1k, 10k and 50k entries: an O(1) cache costs the same
/// per operation at every size, apart from what the processor's caches add once the table no longer
/// fits in them. Two key types: `Int`, the bare structure, and URL strings, what the store's tier of
/// originals is keyed by.
enum MemoryCacheBenchmark {
    static func run(rounds: Int) {
        measure(label: "Int keys", rounds: rounds) { $0 }
        measure(label: "URL-string keys, as the tier of originals", rounds: rounds) {
            "https://images.example.com/photos/\($0).jpg?w=1024"
        }
    }

    private static func measure<Key: Hashable>(label: String, rounds: Int, key: (Int) -> Key) {
        let sizes = [1_000, 10_000, 50_000]
        let operations = 100_000
        var contest = Contest()
        for _ in 0..<rounds {
            for size in sizes {
                // Full at `size` entries, so every insert of a new key also evicts the oldest one.
                let cache = MemoryCache<Key, Int>(countLimit: size, costLimit: .max)
                for index in 0..<size { cache.insert(index, forKey: key(index), cost: 1) }
                let newKeys = (size..<(size + operations)).map(key)
                contest.record("insert \(size)", perItemMicroseconds(newKeys) { cache.insert(0, forKey: $0, cost: 1) })
                var generator = SystemRandomNumberGenerator()
                let present = (0..<operations).map { _ in
                    key(Int.random(in: operations..<(size + operations), using: &generator))
                }
                contest.record("hit \(size)", perItemMicroseconds(present) { blackHole(cache.value(forKey: $0)) })
            }
        }
        print(
            "\nMemory tier, \(label): per operation, median of \(rounds) rounds of \(operations), uniformly random hits"
        )
        print(column("entries", 10) + column("insert+evict (ns)", 20) + "hit (ns)")
        for size in sizes {
            print(
                column("\(size)", 10) + column(format(contest.median("insert \(size)") * 1000, digits: 0), 20)
                    + format(contest.median("hit \(size)") * 1000, digits: 0))
        }
        let insertRatio = contest.median("insert 50000") / contest.median("insert 1000")
        let hitRatio = contest.median("hit 50000") / contest.median("hit 1000")
        print("\nratio                         measured  goal")
        print(
            column("insert 50k / 1k", 30) + column(format(insertRatio), 10) + "<= 1.3  "
                + SizeLookupBenchmark.verdict(insertRatio <= 1.3))
        print(
            column("hit 50k / 1k", 30) + column(format(hitRatio), 10) + "<= 1.3  "
                + SizeLookupBenchmark.verdict(hitRatio <= 1.3))
    }
}
