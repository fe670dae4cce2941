#if canImport(UIKit) && !os(watchOS)
import UIKit
#endif

extension ImageStore {
    /// Has UIKit's memory warnings empty this store's memory tiers when its configuration asks for
    /// it (``Configuration/purgesOnMemoryWarning``). Calling it again does nothing more.
    ///
    /// On Linux and macOS there is no such warning and this does nothing: call ``clearMemory()``
    /// when the process needs its memory back.
    func registerForMemoryWarnings() {
        #if canImport(UIKit) && !os(watchOS)
        if configuration.purgesOnMemoryWarning { MemoryWarnings.register(self) }
        #endif
    }
}

#if canImport(UIKit) && !os(watchOS)
/// The one observer of `UIApplication.didReceiveMemoryWarningNotification`, and the stores it
/// empties. Stores are held weakly, so registering one does not keep it alive.
enum MemoryWarnings {
    private struct WeakStore {
        weak var store: ImageStore?
    }

    private static let stores = LockedBox([ObjectIdentifier: WeakStore]())

    /// Adds the observer on first use. `queue: nil` runs the purge on the posting thread (UIKit
    /// posts on the main thread); `clearMemory()` only takes the tiers' locks, so that is cheap.
    private static let observer: Void = {
        _ = NotificationCenter.default.addObserver(
            forName: UIApplication.didReceiveMemoryWarningNotification, object: nil, queue: nil
        ) { _ in
            MemoryWarnings.purge()
        }
    }()

    static func register(_ store: ImageStore) {
        _ = observer
        // The stores released since go first, as ``purge()`` does: an app that opens and lets go of stores
        // between warnings keeps no more entries than it has live stores.
        stores.withLock { stores in
            stores = stores.filter { $0.value.store != nil }
            stores[ObjectIdentifier(store)] = WeakStore(store: store)
        }
    }

    static func purge() {
        // Collected under the lock, cleared outside it: never call out while holding a lock.
        let alive = stores.withLock { stores -> [ImageStore] in
            stores = stores.filter { $0.value.store != nil }
            return stores.values.compactMap(\.store)
        }
        for store in alive { store.clearMemory() }
    }
}
#endif
