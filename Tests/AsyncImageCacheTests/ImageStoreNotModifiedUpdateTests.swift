import Foundation
import Testing

@testable import AsyncImageCache

/// RFC 9111 4.3.4: a `304 Not Modified` updates the stored response's header fields. The fields it
/// carries replace the stored ones, the others stay, and the entry's freshness comes from the result:
/// a kept `max-age` still comes before an `Expires` the 304 brings, and a `Cache-Control` it brings
/// replaces the stored one whole.
@Suite(.timeLimit(.minutes(3))) struct ImageStoreNotModifiedUpdateTests {
    private struct Fixture {
        let folder = TemporaryDirectory("not-modified-update")
        let server: TestHTTPServer

        init() async throws {
            try SampleImages.jpeg(width: 320, height: 240).write(to: folder.url.appendingPathComponent("photo.jpg"))
            server = try await TestHTTPServer(serving: folder.url)
        }

        func store() throws -> ImageStore {
            try ImageStore.makeForTesting(root: folder.url.appendingPathComponent("cache"))
        }
    }

    /// How long an entry stays fresh after its revalidation.
    enum Freshness: Sendable {
        /// Seconds from the 304.
        case fromThe304(TimeInterval)
        /// Seconds from the first response: an `Expires` that stayed.
        case fromThe200(TimeInterval)
        case untilEvicted
    }

    /// The header fields of the first response and of the 304 to its revalidation (the route
    /// `/cache-fields/<first>/<then>`), and the freshness the entry has after the 304.
    struct Update: CustomTestStringConvertible, Sendable {
        let first: String
        let then: String
        let freshness: Freshness

        var testDescription: String { "200 \(first), then 304 \(then == "-" ? "with Date and ETag only" : then)" }
    }

    static let updates = [
        // The stored max-age comes before the 304's Expires (before: an hour, from the Expires).
        Update(first: "Cache-Control=max-age=1", then: "Expires=+3600", freshness: .fromThe304(1)),
        Update(first: "Cache-Control=max-age=1", then: "-", freshness: .fromThe304(1)),
        Update(first: "Cache-Control=max-age=1", then: "Cache-Control=max-age=600", freshness: .fromThe304(600)),
        // A Cache-Control without max-age replaces the stored one: nothing limits freshness any more
        // (before: the stored second).
        Update(first: "Cache-Control=max-age=1", then: "Cache-Control=public", freshness: .untilEvicted),
        // ... and the stored Expires counts again (before: the stored second).
        Update(
            first: "Cache-Control=max-age=1;Expires=+3600", then: "Cache-Control=public",
            freshness: .fromThe200(3600)),
        // no-cache stays (before: fresh for an hour), and no-store with it (the entry has no file).
        Update(first: "Cache-Control=no-cache", then: "Expires=+3600", freshness: .fromThe304(0)),
        Update(first: "Cache-Control=no-store,no-cache", then: "Expires=+3600", freshness: .fromThe304(0)),
        Update(first: "Cache-Control=no-cache", then: "Cache-Control=max-age=600", freshness: .fromThe304(600)),
        // An Expires in the past stays in the past; a 304's max-age comes before it.
        Update(first: "Expires=-60", then: "-", freshness: .fromThe304(0)),
        Update(first: "Expires=-60", then: "Cache-Control=max-age=600", freshness: .fromThe304(600)),
        // The Age a cache reported for the first response is not the 304's, which has none: the server
        // answered it itself (before: the stored lifetime less that Age, stale at once).
        Update(first: "Cache-Control=max-age=600;Age=600", then: "-", freshness: .fromThe304(600)),
        // A kept Expires is a date: it counts from the 304's Date, and passes when it says. Made half an hour
        // ago, with Expires in half an hour and an Age of 4000 s (stale on arrival), the entry is fresh for
        // that half hour after a 304 (before: for an hour from the 304, Expires less the first Date, a
        // cache's Age past the date).
        Update(first: "Date=-1800;Expires=+1800;Age=4000", then: "-", freshness: .fromThe200(1800)),
        // A stored Vary: * stays through a 304 without Vary, whatever Cache-Control it brings (before: fresh
        // for ten minutes), and goes with one whose Vary has no *, leaving the stored max-age.
        Update(
            first: "Cache-Control=max-age=3600;Vary=*", then: "Cache-Control=max-age=600", freshness: .fromThe304(0)),
        Update(first: "Cache-Control=max-age=3600;Vary=*", then: "-", freshness: .fromThe304(0)),
        Update(first: "Cache-Control=max-age=600;Vary=*", then: "Vary=Accept", freshness: .fromThe304(600)),
    ]

    @Test(arguments: updates)
    func a304UpdatesTheStoredFieldsItCarriesAndKeepsTheOthers(_ update: Update) async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-fields/\(update.first)/\(update.then)/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        let beforeFirst = Date()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        let afterFirst = Date()
        let isStorable = !update.first.contains("no-store")
        #expect(store.disk.contains(url) == isStorable)
        // max-age=1 goes stale after a second.
        try await waitUntil { store.storedCacheMetadata(for: url)?.isStale() == true }
        let before = Date()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 80))
        try await waitUntil { try await fixture.server.statuses(for: path) == [200, 304] }
        try await waitUntil { store.statistics.notModified == 1 }
        let after = Date()
        let (lifetime, start, end): (TimeInterval?, Date, Date) =
            switch update.freshness {
            case .fromThe304(let lifetime): (lifetime, before, after)
            // Expires less Date, both in whole seconds, may be a second short, or over when the Date is a
            // 304's, which hides the fraction of a second it took.
            case .fromThe200(let lifetime):
                (lifetime, beforeFirst.addingTimeInterval(-1), afterFirst.addingTimeInterval(1))
            case .untilEvicted: (nil, before, after)
            }
        var kept = [store.storedCacheMetadata(for: url)]
        if isStorable { kept.append(store.disk.cacheMetadata(for: url)) }
        for metadata in kept {
            let metadata = try #require(metadata)
            let seconds = metadata.expires.map { "\($0.timeIntervalSince(after).rounded()) s" } ?? "never"
            #expect(
                metadata.expires(after: lifetime, receivedBetween: start, and: end),
                "expires \(seconds) after the 304")
        }
        #expect(store.disk.contains(url) == isStorable)
    }
}

extension ImageStoreNotModifiedUpdateTests {
    /// A 304 whose strong entity tag is not the stored one's names another response than the one stored,
    /// and must not update it (RFC 9111 4.3.4): here the server changed the image and answers a check with
    /// the new tag and ten minutes of freshness. Before, the stored facts took both, and the old image was
    /// shown as fresh, then checked with the new tag, and kept for good. Now the 304 updates nothing: the
    /// image is fetched whole at once, and the new one replaces the old.
    @Test func a304WithAnotherStrongEntityTagUpdatesNothingAndTheImageIsFetchedWhole() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-fields/Cache-Control=no-cache/ETag=%22v2%22;Cache-Control=max-age=600/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        let first = try #require(store.disk.cacheMetadata(for: url)?.entityTag)
        try SampleImages.jpeg(width: 200, height: 200, seed: 9).write(
            to: fixture.folder.url.appendingPathComponent("photo.jpg"))
        let newBytes = try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))

        try await expectShownThenFetchedWhole(url, path: path, newBytes: newBytes, store: store, fixture: fixture)
        for metadata in [store.disk.cacheMetadata(for: url), store.storedCacheMetadata(for: url)] {
            let metadata = try #require(metadata)
            #expect(metadata.entityTag != "\"v2\"" && metadata.entityTag != first)
            #expect(metadata.isStale(), "fresh from the 304's max-age")
        }
    }

    /// A server without entity tags that answers 304 to an `If-Modified-Since` whenever its file is not
    /// newer (nginx's `if_modified_since before`, Express's static files without ETags), once the file was put
    /// back to an older one: its 304 carries the older file's `Last-Modified`, another response than the one
    /// stored (RFC 9111 4.3.4). Before, the 304 updated the stored facts with that date, so the old image was
    /// kept as unchanged and every later check, sent with the older date, got a 304 again. Now the image is
    /// fetched whole at once.
    @Test func a304WithAnOlderLastModifiedUpdatesNothingAndTheImageIsFetchedWhole() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-lm/no-cache/images/photo.jpg"
        let url = fixture.server.url(path)
        let file = fixture.folder.url.appendingPathComponent("photo.jpg")
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        let first = try #require(store.disk.cacheMetadata(for: url)?.lastModified)
        let firstDate = try #require(HTTPDate.parse(first))
        // The file put back to an older one: other bytes, modified an hour before the first.
        try SampleImages.jpeg(width: 200, height: 200, seed: 9).write(to: file)
        try FileManager.default.setAttributes(
            [.modificationDate: firstDate.addingTimeInterval(-3600)], ofItemAtPath: file.path)
        let newBytes = try Data(contentsOf: file)

        try await expectShownThenFetchedWhole(url, path: path, newBytes: newBytes, store: store, fixture: fixture)
        for metadata in [store.disk.cacheMetadata(for: url), store.storedCacheMetadata(for: url)] {
            let metadata = try #require(metadata)
            #expect(metadata.lastModified.flatMap { HTTPDate.parse($0) } == firstDate.addingTimeInterval(-3600))
        }
    }

    /// Loads the stale (no-cache) 320x240 image of `url` at `path`, which shows the old one and checks it;
    /// expects the check's 304 to have updated nothing: the image fetched whole (200, 304, 200), the new
    /// 200x200 image's size and bytes in the store.
    private func expectShownThenFetchedWhole(
        _ url: URL, path: String, newBytes: Data, store: ImageStore, fixture: Fixture
    ) async throws {
        #expect(
            try await store.image(for: ImageRequest(url: url, targetWidth: 100)).pixelSize
                == PixelSize(width: 100, height: 75))
        try await waitUntil { store.revalidating.withLock { $0.isEmpty } }
        store.waitForDiskMaintenance()
        #expect(try await fixture.server.statuses(for: path) == [200, 304, 200])
        #expect(store.cachedPixelSize(for: url) == CGSize(width: 200, height: 200))
        #expect(store.disk.data(for: url) == newBytes)
    }

    /// Which 304 may update the stored response: one without an entity tag, one with the stored tag
    /// (a strong tag compared strongly), or one whose weak tag matches it weakly.
    @Test func a304UpdatesTheStoredResponseOnlyWhenItsEntityTagMatches() {
        let stored = HTTPCacheMetadata(policy: HTTPCachePolicy(entityTag: "\"a\""))
        let weak = HTTPCacheMetadata(policy: HTTPCachePolicy(entityTag: "W/\"a\""))
        let withoutTag = HTTPCacheMetadata(policy: HTTPCachePolicy(lastModified: "Tue, 01 Jan 2030 00:00:00 GMT"))
        for (metadata, tag, updates) in [
            (stored, "\"a\"", true), (stored, "W/\"a\"", true), (stored, nil, true), (stored, "\"b\"", false),
            (stored, "W/\"b\"", false), (weak, "W/\"a\"", true), (weak, "\"a\"", false), (withoutTag, "\"a\"", false),
        ] as [(HTTPCacheMetadata, String?, Bool)] {
            #expect(metadata.isUpdated(by: HTTPCachePolicy(entityTag: tag)) == updates, "\(String(describing: tag))")
        }
    }

    /// The validators a 304 carries replace the stored ones, each on its own: a new Last-Modified beside
    /// the stored entity tag (a 304 with another strong tag updates nothing, see above).
    @Test(arguments: ["Last-Modified=Tue,%2001%20Jan%202030%2000:00:00%20GMT"])
    func a304ReplacesTheValidatorsItCarries(then: String) async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-fields/Cache-Control=no-cache/\(then)/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        let first = try #require(store.disk.cacheMetadata(for: url))
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 80))
        try await waitUntil { store.statistics.notModified == 1 }
        for metadata in [store.disk.cacheMetadata(for: url), store.storedCacheMetadata(for: url)] {
            let metadata = try #require(metadata)
            #expect(metadata.lastModified == "Tue, 01 Jan 2030 00:00:00 GMT")
            #expect(metadata.entityTag == first.entityTag)
        }
    }

    /// A 304 whose Cache-Control lets a `no-store` image be stored now writes the bytes memory holds, with
    /// the new facts, as a 200 would have: before, only the facts were refreshed (in memory: there was no
    /// file to put them on), and the next launch downloaded the image again though it was fresh for ten
    /// minutes.
    @Test func a304ThatLetsANoStoreImageBeStoredWritesItsFile() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-fields/Cache-Control=no-store,no-cache/Cache-Control=max-age=600/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        store.waitForDiskMaintenance()
        #expect(!store.disk.contains(url))
        // Stale (no-store): shown, and checked; the 304 says max-age=600.
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 80))
        try await waitUntil { store.statistics.notModified == 1 && store.revalidating.withLock { $0.isEmpty } }
        store.waitForDiskMaintenance()
        #expect(store.disk.contains(url), "the image may be stored now, and has no file")
        #expect(
            store.disk.data(for: url) == (try Data(contentsOf: fixture.folder.url.appendingPathComponent("photo.jpg"))))
        #expect(store.disk.cacheMetadata(for: url)?.cacheControlLifetime == 600)
        #expect(store.disk.cacheMetadata(for: url)?.isStale() == false)

        let relaunched = try fixture.store()
        _ = try await relaunched.image(for: ImageRequest(url: url, targetWidth: 60))
        let statuses = try await fixture.server.statuses(for: path)
        #expect(statuses == [200, 304], "downloaded again after a relaunch: \(statuses)")
    }

    /// A response that may not be stored stays so after a 304 without Cache-Control: its facts say so in
    /// memory, and it gets no file.
    @Test func noStoreOutlivesA304WithoutCacheControl() async throws {
        let fixture = try await Fixture()
        defer { fixture.server.stop() }
        let path = "/cache-fields/Cache-Control=no-store,max-age=0/Expires=+3600/images/photo.jpg"
        let url = fixture.server.url(path)
        let store = try fixture.store()
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 100))
        #expect(store.storedCacheMetadata(for: url)?.isStorable == false)
        _ = try await store.image(for: ImageRequest(url: url, targetWidth: 80))
        try await waitUntil { store.statistics.notModified == 1 }
        let metadata = try #require(store.storedCacheMetadata(for: url))
        #expect(metadata.isStorable == false && metadata.cacheControlLifetime == 0 && metadata.isStale())
        #expect(!store.disk.contains(url))
    }
}
