import AsyncImageCache
import Foundation

/// Insert and hit cost of the memory tier at 1k, 10k and 50k entries: an O(1) cache costs the same
/// per operation at every size, apart from what the processor's caches add once the table no longer
/// fits in them. Two key types: `Int`, the bare structure, and URL strings, what the store's tier of
/// originals is keyed by.
///
/// Beside the hits, in the same rounds: a bare `Dictionary` looked up with the same keys (the floor
/// any hash map pays, cache misses included), and hits confined to the 1,000 most recent keys, which
/// keep the touched memory the same at every size and so show what the entry count alone costs.
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
                // Every key array is built before the cache is filled: building one between the cache's
                // operations and a timed pass (100,000 random draws and key constructions) evicts the
                // cache's table from the processor's caches, so the first pass at 50k entries paid a
                // refill that the 1k table, and the bare Dictionary built just before its own pass, did not.
                let newKeys = (size..<(size + operations)).map(key)
                var generator = SystemRandomNumberGenerator()
                // After the inserts the cache holds exactly the keys `operations..<(size + operations)`.
                let present = (0..<operations).map { _ in
                    key(Int.random(in: operations..<(size + operations), using: &generator))
                }
                let hot = (0..<operations).map { _ in
                    key(Int.random(in: (size + operations - 1_000)..<(size + operations), using: &generator))
                }
                // Full at `size` entries, so every insert of a new key also evicts the oldest one.
                let cache = MemoryCache<Key, Int>(countLimit: size, costLimit: .max)
                for index in 0..<size { cache.insert(index, forKey: key(index), cost: 1) }
                contest.record("insert \(size)", perItemMicroseconds(newKeys) { cache.insert(0, forKey: $0, cost: 1) })
                contest.record("hit \(size)", perItemMicroseconds(present) { blackHole(cache.value(forKey: $0)) })
                contest.record("hot \(size)", perItemMicroseconds(hot) { blackHole(cache.value(forKey: $0)) })
                // The floor's table is built right before its pass, as the cache's was filled before its own.
                var dictionary: [Key: Int] = [:]
                for index in operations..<(size + operations) { dictionary[key(index)] = index }
                contest.record("floor \(size)", perItemMicroseconds(present) { blackHole(dictionary[$0]) })
                // Untimed, after every pass: the hits timed were hits (a change to eviction would time misses).
                for keys in [present, hot] {
                    guard keys.allSatisfy({ cache.value(forKey: $0) != nil }) else {
                        fatalError("memory benchmark: a key timed as a hit at \(size) entries was not in the cache")
                    }
                }
            }
        }
        print(
            "\nMemory tier, \(label): per operation, median of \(rounds) rounds of \(operations), uniformly random hits"
        )
        print(
            column("entries", 10) + column("insert+evict (ns)", 20) + column("hit (ns)", 10)
                + column("bare Dictionary (ns)", 22) + "hit, 1k hot keys (ns)")
        func nanoseconds(_ name: String, _ width: Int) -> String {
            column(format(contest.median(name) * 1000, digits: 0), width)
        }
        for size in sizes {
            print(
                column("\(size)", 10) + nanoseconds("insert \(size)", 20) + nanoseconds("hit \(size)", 10)
                    + nanoseconds("floor \(size)", 22) + nanoseconds("hot \(size)", 0))
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
        let floorRatio = contest.median("floor 50000") / contest.median("floor 1000")
        print(column("  bare Dictionary 50k / 1k", 30) + format(floorRatio) + "      (the floor, for comparison)")
        let hotRatio = contest.median("hot 50000") / contest.median("hot 1000")
        print(column("  hit on 1k hot keys 50k / 1k", 30) + format(hotRatio) + "      (the entry count alone)")
    }
}
