import Foundation
import Testing

@testable import AsyncImageCache

/// Caching facts as RFC 9111 reads them from a response's fields (Cache-Control, Expires, Age, Date,
/// validators), and as they are kept in a cached file's attribute.
@Suite(.timeLimit(.minutes(3))) struct HTTPCachePolicyTests {
    /// The policy response headers `fields` give, names compared case-insensitively.
    static func policy(headers fields: [String: String]) -> HTTPCachePolicy {
        HTTPCachePolicy { name in fields.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value }
    }

    /// A 304's `Pragma: no-cache` without `Cache-Control`, merged into a stored response whose `Cache-Control`
    /// gives a lifetime (RFC 9111 4.3.4), changes nothing: `Cache-Control` comes first (5.4). Before, it
    /// stood as the 304's own `no-cache` and made a year-long image stale at once, asked for at every load.
    /// Onto a stored response without a lifetime it still makes the entry stale, as on a 200.
    @Test func aPragmaOnA304GivesWayToTheStoredCacheControl() {
        let received = Date(timeIntervalSince1970: 1000)
        let now = Date(timeIntervalSince1970: 5000)
        let pragma = Self.policy(headers: ["Pragma": "no-cache"])
        let stored = HTTPCacheMetadata(
            policy: Self.policy(headers: ["Cache-Control": "max-age=31536000", "ETag": "\"a\""]), receivedAt: received)
        let refreshed = stored.refreshed(by: pragma, at: now)
        #expect(refreshed.cacheControlLifetime == 31_536_000)
        #expect(refreshed.expires == now.addingTimeInterval(31_536_000))
        let unsaid = HTTPCacheMetadata(policy: Self.policy(headers: ["ETag": "\"a\""]), receivedAt: received)
        #expect(unsaid.refreshed(by: pragma, at: now).isStale(at: now))
        #expect(HTTPCacheMetadata(policy: pragma, receivedAt: now).isStale(at: now))
    }

    /// A 304 without an entity tag whose `Last-Modified` names another instant than the stored one's
    /// names another response (RFC 9111 4.3.4), and updates nothing; the same instant written in another
    /// of HTTP's date forms, or a 304 without `Last-Modified`, still updates it. An entity tag decides
    /// where the 304 has one.
    @Test func a304WithAnotherLastModifiedAndNoEntityTagUpdatesNothing() {
        let modified = "Tue, 01 Jan 2030 00:00:00 GMT"
        let onlyDate = HTTPCacheMetadata(policy: HTTPCachePolicy(lastModified: modified))
        let tagAndDate = HTTPCacheMetadata(policy: HTTPCachePolicy(entityTag: "\"a\"", lastModified: modified))
        for (stored, tag, date, updates) in [
            (onlyDate, nil, modified, true), (onlyDate, nil, "Tuesday, 01-Jan-30 00:00:00 GMT", true),
            (onlyDate, nil, "Tue Jan  1 00:00:00 2030", true), (onlyDate, nil, nil, true),
            (onlyDate, nil, "Mon, 01 Jan 2029 00:00:00 GMT", false),
            (onlyDate, nil, "Wed, 01 Jan 2031 00:00:00 GMT", false),
            (onlyDate, nil, "not a date", false), (tagAndDate, nil, "Mon, 01 Jan 2029 00:00:00 GMT", false),
            (tagAndDate, "\"a\"", "Mon, 01 Jan 2029 00:00:00 GMT", true),
            (HTTPCacheMetadata(policy: HTTPCachePolicy(entityTag: "\"a\"")), nil, modified, true),
        ] as [(HTTPCacheMetadata, String?, String?, Bool)] {
            #expect(
                stored.isUpdated(by: HTTPCachePolicy(entityTag: tag, lastModified: date)) == updates,
                "\(String(describing: tag)) \(String(describing: date))")
        }
    }

    /// A lifetime or `no-store` set on a policy read from a `Pragma: no-cache` is said in `Cache-Control`
    /// (as the properties' documentation has it): on a 304 it replaces the stored response's lifetime,
    /// where the Pragma alone gives way to it. Before, the value set was dropped for the stored one.
    @Test func aLifetimeOrNoStoreSetOverAPragmaReplacesTheStoredOneOnA304() {
        let received = Date(timeIntervalSince1970: 1000)
        let now = Date(timeIntervalSince1970: 5000)
        let stored = HTTPCacheMetadata(
            policy: Self.policy(headers: ["Cache-Control": "max-age=60", "ETag": "\"a\""]), receivedAt: received)
        var longer = Self.policy(headers: ["Pragma": "no-cache"])
        longer.maxAge = 600
        #expect(stored.refreshed(by: longer, at: now).cacheControlLifetime == 600)
        var unstorable = Self.policy(headers: ["Pragma": "no-cache"])
        unstorable.isStorable = false
        #expect(!stored.refreshed(by: unstorable, at: now).isStorable)
        #expect(stored.refreshed(by: Self.policy(headers: ["Pragma": "no-cache"]), at: now).cacheControlLifetime == 60)
    }

    /// A comma inside a quoted string is part of the directive's value (RFC 9110 5.6.1, 5.6.4): the fields a
    /// qualified `no-cache` names are not directives of their own. Before, `no-store` here was read as one.
    @Test func aCommaInAQuotedValueDoesNotSplitTheDirective() {
        let qualified = Self.policy(headers: [
            "Cache-Control": "max-age=86400, no-cache=\"Set-Cookie, no-store, Set-Cookie2\""
        ])
        #expect(qualified.isStorable && qualified.maxAge == 86400)
        let escaped = Self.policy(headers: ["Cache-Control": "private=\"a\\\", no-store, b\", max-age=30"])
        #expect(escaped.isStorable && escaped.maxAge == 30)
        let plain = Self.policy(headers: ["Cache-Control": "max-age=86400, no-store"])
        #expect(!plain.isStorable)
        let spaced = Self.policy(headers: ["Cache-Control": " , max-age=5 ,, "])
        #expect(spaced.maxAge == 5)
    }

    @Test func freshnessFieldsAreKeptOnDiskAndOlderEntriesStillRead() throws {
        let made = HTTPCacheMetadata(
            policy: HTTPCachePolicy(maxAge: 2.5, entityTag: "\"e\""), receivedAt: Date(timeIntervalSince1970: 1000))
        #expect(made.cacheControlLifetime == 2.5 && made.expiresAt == nil)
        // The expiry is kept in whole seconds, rounded down; the lifetime as it was.
        let read = try #require(HTTPCacheMetadata(encoded: made.encoded))
        #expect(read.cacheControlLifetime == 2.5 && read.expires == Date(timeIntervalSince1970: 1002))
        #expect(read.entityTag == "\"e\"" && !read.lifetimeSourceIsUnknown)
        // So is when an Expires passes, beside the max-age that comes before it. `hourFrom(made)`: a
        // response made `made` seconds after 1970 (its Date) that expires an hour later.
        func hourFrom(_ made: Int) -> [String: String] {
            func date(_ seconds: Int) -> String {
                String(format: "Thu, 01 Jan 1970 %02d:%02d:%02d GMT", seconds / 3600, seconds / 60 % 60, seconds % 60)
            }
            return ["Date": date(made), "Expires": date(made + 3600)]
        }
        let both = HTTPCacheMetadata(
            policy: Self.policy(headers: hourFrom(1000).merging(["Cache-Control": "max-age=60"]) { $1 }),
            receivedAt: Date(timeIntervalSince1970: 1000))
        #expect(both.expires == Date(timeIntervalSince1970: 1060))
        #expect(both.expiresAt == Date(timeIntervalSince1970: 4600) && both.cacheControlLifetime == 60)
        #expect(HTTPCacheMetadata(encoded: both.encoded) == both)
        // An older build wrote `1` and four lines, or five with one lifetime from max-age or Expires: read.
        let older = try #require(HTTPCacheMetadata(encoded: Array("1\n1060\n\"e\"\n".utf8)))
        #expect(older.expires == Date(timeIntervalSince1970: 1060) && older.cacheControlLifetime == 0)
        let olderWithLifetime = try #require(HTTPCacheMetadata(encoded: Array("1\n1060\n\"e\"\n\n60".utf8)))
        #expect(olderWithLifetime.cacheControlLifetime == 60 && olderWithLifetime.lifetimeSourceIsUnknown)
        // A response that varies on `*` writes `3` and a seventh line; every other entry stays as before.
        var varying = both
        varying.variesOnEverything = true
        #expect(HTTPCacheMetadata(encoded: varying.encoded) == varying)
        #expect(varying.encoded.first == UInt8(ascii: "3") && both.encoded.first == UInt8(ascii: "2"))
        let invalidEntries = [
            "1\n1060\n\n\nsoon", "2\n1060\n\n\n60", "2\n1060\n\n\n60\nsoon", "3\n1060\n\n\n60\n",
            "3\n1060\n\n\n60\n\nAccept", "2\n1060\n\n\n60\n\n*",
        ]
        for invalid in invalidEntries {
            #expect(HTTPCacheMetadata(encoded: Array(invalid.utf8)) == nil, "\(invalid)")
        }
        // A bare 304 keeps the lifetime and validators; one with its own max-age uses that.
        let now = Date(timeIntervalSince1970: 5000)
        let bare = made.refreshed(by: HTTPCachePolicy(), at: now)
        #expect(bare.cacheControlLifetime == 2.5 && bare.expires == now.addingTimeInterval(2.5))
        #expect(bare.entityTag == "\"e\"")
        let given = made.refreshed(by: HTTPCachePolicy(maxAge: 60, entityTag: "\"f\""), at: now)
        #expect(given.cacheControlLifetime == 60 && given.expires == now.addingTimeInterval(60))
        #expect(given.entityTag == "\"f\"")
        // The kept max-age comes before an Expires the 304 brings; a kept Expires stays where it was.
        let withExpires = Self.policy(headers: hourFrom(5000))  // a 304 made as it arrives
        #expect(made.refreshed(by: withExpires, at: now).expires == now.addingTimeInterval(2.5))
        let expiring = HTTPCacheMetadata(
            policy: Self.policy(headers: hourFrom(1000)), receivedAt: Date(timeIntervalSince1970: 1000))
        let soon = Date(timeIntervalSince1970: 2000)
        #expect(expiring.refreshed(by: HTTPCachePolicy(), at: soon).expires == Date(timeIntervalSince1970: 4600))
        #expect(expiring.refreshed(by: HTTPCachePolicy(), at: now).expires == now)
        #expect(
            both.refreshed(by: Self.policy(headers: ["Cache-Control": "public"]), at: soon).expires == both.expiresAt)
        // An older entry's response limited freshness by an unknown lifetime, or one that may have come
        // from Expires: stale at once after a bare 304 (before: fresh until evicted), or the lifetime
        // kept; a 304 that gives a lifetime, from max-age or from Expires, uses it.
        let olderBare = older.refreshed(by: HTTPCachePolicy(), at: now)
        #expect(olderBare.cacheControlLifetime == 0 && olderBare.expires == now && olderBare.isStale(at: now))
        #expect(older.refreshed(by: HTTPCachePolicy(maxAge: 60), at: now).expires == now.addingTimeInterval(60))
        #expect(olderWithLifetime.refreshed(by: HTTPCachePolicy(), at: now).expires == now.addingTimeInterval(60))
        #expect(olderWithLifetime.refreshed(by: withExpires, at: now).expires == now.addingTimeInterval(3600))
        // A response that never said: still fresh until evicted after a 304.
        let unsaid = HTTPCacheMetadata(policy: HTTPCachePolicy(entityTag: "\"g\""))
        #expect(unsaid.refreshed(by: HTTPCachePolicy(), at: now).expires == nil)
    }

    /// The parts of a `Cache-Control` field and of the age that need no server: directive spelling, and
    /// the age a `Date` gives at the time a response arrives.
    @Test func directivesAndDatesGiveTheLifetimesARFC9111CacheWould() {
        // A max-age without a value is invalid, so stale (before: ignored, fresh until evicted); spaces
        // around its "=" are forgiven (before: ignored too).
        #expect(Self.policy(headers: ["Cache-Control": "max-age"]).maxAge == 0)
        #expect(Self.policy(headers: ["Cache-Control": "max-age = 3600"]).maxAge == 3600)
        #expect(Self.policy(headers: ["Cache-Control": "MAX-AGE =\"60\""]).maxAge == 60)
        #expect(Self.policy(headers: ["Cache-Control": "no-cache=\"Set-Cookie\", max-age=60"]).maxAge == 60)
        #expect(Self.policy(headers: ["Cache-Control": "max-age=3600, no-store"]).maxAge == 0)
        #expect(Self.policy(headers: ["Cache-Control": "max-age=3600", "Vary": "Accept-Encoding, *"]).maxAge == 0)
        #expect(Self.policy(headers: ["Cache-Control": "max-age=3600", "Vary": "Accept-Encoding"]).maxAge == 3600)
        // Made at 1000 s, an hour's Expires, arriving two days later: its lifetime was used up long ago.
        let made = ["Date": "Thu, 01 Jan 1970 00:16:40 GMT", "Expires": "Thu, 01 Jan 1970 01:16:40 GMT"]
        let lateExpires = HTTPCacheMetadata(
            policy: Self.policy(headers: made), receivedAt: Date(timeIntervalSince1970: 173_800))
        #expect(lateExpires.isStale(at: Date(timeIntervalSince1970: 173_800)))
        // A max-age of an hour, arriving half an hour after the Date: fresh for the other half, less the
        // second the Date's whole seconds may hide, which the store gives back.
        let halfway = HTTPCacheMetadata(
            policy: Self.policy(headers: ["Date": made["Date"]!, "Cache-Control": "max-age=3600"]),
            receivedAt: Date(timeIntervalSince1970: 2800))
        #expect(halfway.expires == Date(timeIntervalSince1970: 2800 + 1801))
    }

    @Test func cacheControlIsParsedAsTheRFCSays() {
        func policy(_ cacheControl: String?, etag: String? = nil) -> HTTPCachePolicy {
            HTTPCachePolicy { name in
                switch name.lowercased() {
                case "cache-control": cacheControl
                case "etag": etag
                default: nil
                }
            }
        }
        #expect(policy("no-store").isStorable == false)
        #expect(policy("public, max-age=600").maxAge == 600)
        #expect(policy("MAX-AGE=\"60\"").maxAge == 60)
        #expect(policy("no-cache, max-age=600").maxAge == 0)
        #expect(policy(nil).maxAge == nil && policy(nil).isStorable)
        #expect(policy(nil, etag: "\"abc\"").entityTag == "\"abc\"")
        let metadata = HTTPCacheMetadata(
            policy: policy("max-age=60", etag: "\"x\""), receivedAt: Date(timeIntervalSince1970: 1000))
        #expect(HTTPCacheMetadata(encoded: metadata.encoded) == metadata)
        #expect(metadata.isStale(at: Date(timeIntervalSince1970: 1059)) == false)
        #expect(metadata.isStale(at: Date(timeIntervalSince1970: 1060)) == true)
        // RFC 9111 1.2.2: a lifetime past 2^31 seconds is 2^31.
        for huge in ["max-age=99999999999999999999", "max-age=\(String(repeating: "9", count: 400))"] {
            #expect(policy(huge).maxAge == 2_147_483_648, "\(huge)")
        }
        // RFC 9111 4.2.1: a max-age that is not delta-seconds (digits) is invalid, and the response stale,
        // as for an invalid Expires (before: "abc", "" and "nan" were fresh until evicted, "1e30" and
        // "inf" fresh for 68 years).
        for invalid in ["abc", "", "nan", "1e30", "inf", "1.5", "-5", "0x10", "60s", "\"\""] {
            #expect(policy("max-age=\(invalid)").maxAge == 0, "max-age=\(invalid)")
        }
        #expect(policy("public, max-age=abc").maxAge == 0)
        // RFC 9111 4.2.1: of two max-age, the first counts (before: the last, 3600).
        #expect(policy("max-age=60, max-age=3600").maxAge == 60)
        #expect(policy("max-age=60, no-cache").maxAge == 0)
        // A custom loader's NaN lifetime is stale at once, as the policy reads it back and as a header's
        // max-age=nan is (before: the store took it for no lifetime, fresh until evicted).
        let notANumber = HTTPCachePolicy(maxAge: .nan)
        #expect(notANumber.maxAge == 0)
        let received = Date(timeIntervalSince1970: 1000)
        #expect(HTTPCacheMetadata(policy: notANumber, receivedAt: received).isStale(at: received))
        // Whatever a custom loader's policy holds, the metadata encodes and reads back.
        for maxAge in [TimeInterval.infinity, -.infinity, .nan, 1e300, -1e300] {
            let made = HTTPCacheMetadata(
                policy: HTTPCachePolicy(maxAge: maxAge), receivedAt: Date(timeIntervalSince1970: 1000))
            #expect(HTTPCacheMetadata(encoded: made.encoded) == made, "\(maxAge)")
        }
    }

    /// The lifetime of a response with `Cache-Control: max-age=600` and `Age: <age>`.
    private func maxAge(age: String) -> TimeInterval? {
        HTTPCachePolicy { name in
            switch name.lowercased() {
            case "cache-control": "max-age=600"
            case "age": age
            default: nil
            }
        }.maxAge
    }

    @Test func ageIsDeltaSecondsAndAnythingElseIsIgnored() {
        #expect(maxAge(age: "100") == 500)
        #expect(maxAge(age: " 100 ") == 500)
        #expect(maxAge(age: "6000") == 0)
        #expect(maxAge(age: "99999999999999999999999") == 0)
        // RFC 9111 5.1: Age is delta-seconds. Before, "1e2" was taken as 100 s, "0x10" as 16 s and
        // "inf" as 68 years; now anything but digits is ignored.
        for invalid in ["1e2", "0x10", "inf", "-5", "1.5", "", "abc"] {
            #expect(maxAge(age: invalid) == 600, "Age: \(invalid)")
        }
    }

    @Test func ofAnAgeSentTwiceTheFirstCounts() {
        // RFC 9111 5.1: of a list-based Age (two lines, which RFC 9110 5.3 lets be joined with a comma),
        // the first member counts.
        // Before, "700, 700" was no Age at all, and a response past its max-age was fresh for 600 s.
        #expect(maxAge(age: "700, 700") == 0)
        #expect(maxAge(age: "100,200") == 500)
        #expect(maxAge(age: " 100 , 1e2") == 500)
        #expect(maxAge(age: "1e2, 100") == 600)
    }

    /// Which caching facts name another response of a URL than others, as a store compares the facts read
    /// with a file's bytes to those it holds: entity tags weakly, else Last-Modified; facts without
    /// validators (a file whose validators were too long for an attribute) name none.
    @Test func factsNameAnotherResponseByTheirValidators() {
        func facts(_ tag: String?, _ modified: String?) -> HTTPCacheMetadata {
            HTTPCacheMetadata(policy: HTTPCachePolicy(maxAge: 60, entityTag: tag, lastModified: modified))
        }
        let (monday, tuesday) = ("Mon, 07 Dec 2026 03:00:00 GMT", "Tue, 08 Dec 2026 03:00:00 GMT")
        let cases: [(HTTPCacheMetadata, HTTPCacheMetadata, Bool)] = [
            (facts("\"a\"", monday), facts("\"a\"", tuesday), false),  // a touched file: the tag says same
            (facts("W/\"a\"", nil), facts("\"a\"", nil), false),
            (facts("\"a\"", nil), facts("\"b\"", nil), true),
            (facts(nil, monday), facts(nil, monday), false),
            (facts(nil, monday), facts(nil, tuesday), true),
            (facts("\"a\"", nil), facts(nil, monday), true),
            (facts(nil, monday), facts("\"a\"", monday), true),
            (facts(nil, nil), facts("\"a\"", monday), false),
            (facts(nil, nil), facts(nil, nil), false),
        ]
        for (facts, other, differs) in cases {
            #expect(
                facts.namesAnotherResponse(than: other) == differs,
                "\(String(describing: facts.entityTag)) \(String(describing: facts.lastModified))")
        }
    }
}
