import Foundation

/// The three forms an HTTP date may take (RFC 9110 5.6.7), all of which a recipient must accept:
///
/// - IMF-fixdate, the one servers send today: `Sun, 06 Nov 1994 08:49:37 GMT`
/// - the obsolete RFC 850 form: `Sunday, 06-Nov-94 08:49:37 GMT`
/// - the obsolete asctime form: `Sun Nov  6 08:49:37 1994`
///
/// Read by hand rather than with `DateFormatter`, which takes one pattern per instance and is costly
/// to make for every response.
enum HTTPDate {
    /// The instant `text` names, or `nil` when it is none of the three forms or names no real day
    /// (`31 Feb`, hour 24). A two-digit RFC 850 year is the latest year with those digits that puts the
    /// date not more than 50 years ahead of `now`, as RFC 9110 asks.
    static func parse(_ text: String, now: Date = Date()) -> Date? {
        var reader = Reader(Array(text.trimmingCharacters(in: .whitespaces).utf8))
        guard let weekday = reader.letters() else { return nil }
        let parts: Parts?
        if weekdays.contains(weekday) {
            parts = reader.skip(",") ? imfFixdate(&reader) : asctime(&reader)
        } else if longWeekdays.contains(weekday), reader.skip(",") {
            parts = rfc850(&reader, now: now)
        } else {
            parts = nil
        }
        guard let parts, reader.isAtEnd else { return nil }
        return parts.date
    }

    /// `, 06 Nov 1994 08:49:37 GMT` after the day name and comma.
    private static func imfFixdate(_ reader: inout Reader) -> Parts? {
        guard reader.skip(" "), let day = reader.number(digits: 2), reader.skip(" "), let month = reader.month(),
            reader.skip(" "), let year = reader.number(digits: 4), reader.skip(" "), var parts = reader.time(),
            reader.skip(" GMT")
        else { return nil }
        (parts.year, parts.month, parts.day) = (year, month, day)
        return parts
    }

    /// ` 06-Nov-94 08:49:37 GMT` after the day name and comma.
    private static func rfc850(_ reader: inout Reader, now: Date) -> Parts? {
        guard reader.skip(" "), let day = reader.number(digits: 2), reader.skip("-"), let month = reader.month(),
            reader.skip("-"), let shortYear = reader.number(digits: 2), reader.skip(" "), var parts = reader.time(),
            reader.skip(" GMT")
        else { return nil }
        let current = Calendar(identifier: .gregorian).dateComponents(in: gmt, from: now)
        let thisYear = current.year ?? 1970
        // 50 years ahead of `now`, field by field: compared so, a day only some years have (29 Feb)
        // needs no date of its own.
        let limit = (
            thisYear + 50, current.month ?? 1, current.day ?? 1, current.hour ?? 0, current.minute ?? 0,
            current.second ?? 0
        )
        // The latest year ending in these digits whose date is not more than 50 years ahead: "more
        // than 50 years in the future" is about the date, and late in a century it is in the next one.
        (parts.year, parts.month, parts.day) = (thisYear - thisYear % 100 + shortYear + 100, month, day)
        while (parts.year, month, day, parts.hour, parts.minute, parts.second) > limit { parts.year -= 100 }
        return parts
    }

    /// ` Nov  6 08:49:37 1994` after the day name: the day is space-padded.
    private static func asctime(_ reader: inout Reader) -> Parts? {
        guard reader.skip(" "), let month = reader.month(), reader.skip(" ") else { return nil }
        let day: Int?
        if reader.skip(" ") {
            day = reader.number(digits: 1)
        } else {
            day = reader.number(digits: 2)
        }
        guard let day, reader.skip(" "), var parts = reader.time(), reader.skip(" "),
            let year = reader.number(digits: 4)
        else { return nil }
        (parts.year, parts.month, parts.day) = (year, month, day)
        return parts
    }

    private static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longWeekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let gmt = TimeZone(identifier: "GMT")!

    /// A date's fields as read, before they are checked.
    private struct Parts {
        var year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0

        /// The instant, or `nil` for a day the month does not have or a time past `23:59:60`.
        var date: Date? {
            guard (1...12).contains(month), (1...HTTPDate.days(inMonth: month, of: year)).contains(day),
                (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
            else { return nil }
            let days = HTTPDate.daysSinceEpoch(year: year, month: month, day: day)
            return Date(timeIntervalSince1970: TimeInterval(((days * 24 + hour) * 60 + minute) * 60 + second))
        }
    }

    private static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the given day of the proleptic Gregorian calendar (the civil-from-days
    /// inverse in Howard Hinnant's `chrono` date algorithms).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Reads a date's bytes front to back.
    private struct Reader {
        private let bytes: [UInt8]
        private var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index == bytes.count }

        /// Consumes `literal` if the text continues with it.
        mutating func skip(_ literal: String) -> Bool {
            let expected = Array(literal.utf8)
            guard bytes[index...].starts(with: expected) else { return false }
            index += expected.count
            return true
        }

        /// Exactly `digits` decimal digits.
        mutating func number(digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + digits] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += digits
            return value
        }

        /// A run of ASCII letters (a day name), case kept.
        mutating func letters() -> String? {
            let start = index
            while index < bytes.count, (UInt8(ascii: "A")...UInt8(ascii: "z")).contains(bytes[index]),
                !(UInt8(ascii: "[")...UInt8(ascii: "`")).contains(bytes[index])
            {
                index += 1
            }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// A three-letter month name, 1 to 12.
        mutating func month() -> Int? {
            for (offset, name) in HTTPDate.months.enumerated() where skip(name) { return offset + 1 }
            return nil
        }

        /// `HH:MM:SS`, into a ``Parts`` with only the time set.
        mutating func time() -> Parts? {
            guard let hour = number(digits: 2), skip(":"), let minute = number(digits: 2), skip(":"),
                let second = number(digits: 2)
            else { return nil }
            return Parts(hour: hour, minute: minute, second: second)
        }
    }
}
