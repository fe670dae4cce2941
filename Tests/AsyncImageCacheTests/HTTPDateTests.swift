import Foundation
import Testing

@testable import AsyncImageCache

@Suite struct HTTPDateTests {
    /// The policy a response with these `Date` and `Expires` headers gets.
    private func policy(date: String, expires: String) -> HTTPCachePolicy {
        HTTPCachePolicy { name in
            switch name.lowercased() {
            case "date": date
            case "expires": expires
            default: nil
            }
        }
    }

    @Test func expiresCountsInEachOfTheThreeFormsRFC9110Lists() {
        // RFC 9110 5.6.7: a recipient must accept all three. Before, the two obsolete forms were
        // "not a date", so such a response was stale at once and revalidated at every load.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        for expires in [
            "Sun, 06 Nov 1994 09:49:37 GMT", "Sunday, 06-Nov-94 09:49:37 GMT", "Sun Nov  6 09:49:37 1994",
        ] {
            #expect(policy(date: date, expires: expires).maxAge == 3600, "Expires: \(expires)")
        }
        #expect(policy(date: "Sunday, 16-Nov-94 08:49:37 GMT", expires: "Sun Nov 16 08:50:37 1994").maxAge == 60)
    }

    @Test func knownInstants() {
        let expected: [(String, TimeInterval)] = [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Thu, 29 Feb 2024 23:59:59 GMT", 1_709_251_199),
            ("Tue, 29 Feb 2000 00:00:00 GMT", 951_782_400),
            ("Mon, 01 Jan 1900 00:00:00 GMT", -2_208_988_800),
            ("Sun Nov  6 08:49:37 1994", 784_111_777),
            ("  Sun, 06 Nov 1994 08:49:37 GMT ", 784_111_777),
        ]
        for (text, seconds) in expected {
            #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == seconds, "\(text)")
        }
    }

    @Test func aTwoDigitYearIsTheLatestNotMoreThanFiftyYearsAhead() throws {
        let now = try #require(HTTPDate.parse("Tue, 01 Dec 2026 00:00:00 GMT"))
        func year(_ text: String) -> Int? {
            HTTPDate.parse(text, now: now).map {
                Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "GMT")!, from: $0).year!
            }
        }
        #expect(year("Sunday, 06-Nov-94 08:49:37 GMT") == 1994)
        #expect(year("Monday, 06-Nov-76 08:49:37 GMT") == 2076)
        #expect(year("Saturday, 06-Nov-77 08:49:37 GMT") == 1977)
        #expect(year("Friday, 06-Nov-26 08:49:37 GMT") == 2026)
        // "More than 50 years in the future" is about the date, not its year: the last day of 2076 is
        // 50 years and a month ahead. Before, 2076 (the year was at most 2026 + 50).
        #expect(year("Friday, 31-Dec-76 00:00:00 GMT") == 1976)
        #expect(year("Sunday, 01-Dec-76 00:00:00 GMT") == 2076)
    }

    @Test func aTwoDigitYearLateInACenturyMayBeInTheNextOne() throws {
        // In 2070, "10" is 2110, 40 years ahead, not 2010, 60 years ago. Before, a year always fell in
        // the century of `now` or the one before.
        let now = try #require(HTTPDate.parse("Wed, 01 Jan 2070 00:00:00 GMT"))
        let date = try #require(HTTPDate.parse("Thursday, 06-Nov-10 08:49:37 GMT", now: now))
        #expect(date == HTTPDate.parse("Thu, 06 Nov 2110 08:49:37 GMT"))
        #expect(
            HTTPDate.parse("Saturday, 06-Nov-21 08:49:37 GMT", now: now)
                == HTTPDate.parse("Sat, 06 Nov 2021 08:49:37 GMT"))
    }

    @Test func anythingElseIsNotADate() {
        for text in [
            "", "0", "-1", "Sun, 31 Feb 1994 08:49:37 GMT", "Mon, 29 Feb 2100 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT", "Sun Nov 6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 GMT trailing", "Xyz, 06 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:37Z",
            "Sun, 06 Nov 1994 08:49", "Sun, 00 Nov 1994 08:49:37 GMT",
        ] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
        }
    }

    @Test func monthEndsAndLeapDaysAgreeWithFoundationsGregorianCalendar() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "GMT"))
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        for year in 1896...2104 {
            for month in 1...12 {
                let first = try #require(calendar.date(from: DateComponents(year: year, month: month, day: 1)))
                let length = try #require(calendar.range(of: .day, in: .month, for: first)).count
                for day in [1, 28, length] {
                    let date = try #require(
                        calendar.date(from: DateComponents(year: year, month: month, day: day, hour: 13, second: 59)))
                    let weekday = weekdays[calendar.component(.weekday, from: date) - 1]
                    let text = String(format: "%@, %02d %@ %04d 13:00:59 GMT", weekday, day, months[month - 1], year)
                    #expect(HTTPDate.parse(text) == date, "\(text)")
                }
                let pastTheEnd = String(format: "Mon, %02d %@ %04d 13:00:59 GMT", length + 1, months[month - 1], year)
                #expect(HTTPDate.parse(pastTheEnd) == nil, "\(pastTheEnd)")
            }
        }
    }
}
