public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension JSONText {
    /// The earliest time a timestamp holds: 0001-01-01T00:00:00.000Z, in milliseconds since 1970.
    public static let earliestMilliseconds: Int64 = -62_135_596_800_000
    /// The latest: 9999-12-31T23:59:59.999Z.
    public static let latestMilliseconds: Int64 = 253_402_300_799_999

    /// Whether `date` is a time a timestamp can write (years 1…9999, not NaN): what every value that
    /// enters the store is checked against at the edge.
    public static func isWritable(_ date: Date) -> Bool {
        let milliseconds = date.timeIntervalSince1970 * 1000
        return milliseconds >= Double(earliestMilliseconds) && milliseconds <= Double(latestMilliseconds)
    }

    /// How many times a time out of range was clamped by ``milliseconds(_:)`` or ``timestamp(_:)``
    /// since the process started (the edge refuses such times, so this stays 0 unless a store holds
    /// one written before it did; the app logs and counts it).
    public static var clampedTimes: Int { clampedCount.load(ordering: .relaxed) }
    private static let clampedCount = Atomic<Int>(0)

    /// `date` in whole milliseconds since 1970, the nearest, clamped to years 1…9999 (NaN: 1970).
    /// Never traps: a store that holds a time out of range (written before the edge refused them)
    /// still serves.
    ///
    /// The nearest, not the floor: a time read from a timestamp is that many milliseconds give or
    /// take a rounding of the `Double` (up to 0.03 ms in year 9999), so flooring could write it one
    /// millisecond early, and every export and import would move it again.
    public static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        if value >= Double(earliestMilliseconds) && value <= Double(latestMilliseconds) { return Int64(value) }
        clampedCount.add(1, ordering: .relaxed)
        if value.isNaN { return 0 }
        return value < 0 ? earliestMilliseconds : latestMilliseconds
    }

    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-21T22:19:31.123Z` (several times faster than
    /// `ISO8601DateFormatter`). A time outside years 1…9999 is written clamped to them
    /// (``milliseconds(_:)``).
    public static func timestamp(_ date: Date) -> String {
        let milliseconds = milliseconds(date)
        // Floor division: a time before 1970 has a negative remainder otherwise.
        let (whole, fraction) = milliseconds >= 0 ? (milliseconds / 1000, milliseconds % 1000) : ((milliseconds - 999) / 1000, (milliseconds % 1000 + 1000) % 1000)
        var seconds = time_t(whole)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(fraction), 3))Z"
    }

    /// Reads a timestamp as ``timestamp(_:)`` writes it (RFC 3339 UTC, `Z`, with or without fractional
    /// seconds); nil for anything else.
    public static func date(fromTimestamp text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for index in range {
                guard index < bytes.count, (48...57).contains(bytes[index]) else { return nil }
                value = value * 10 + Int32(bytes[index] - 48)
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            // Years 1…9999 (what ``timestamp(_:)`` writes), and each field in its range (timegm would
            // roll month 13 or second 75 over into the next unit).
            year >= 1, (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59, second <= 59
        else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), (22...30).contains(bytes.count), let digits = number(20..<(bytes.count - 1)) else { return nil }
            fraction = Double(digits) / pow(10, Double(bytes.count - 21))
        } else if bytes[19] != UInt8(ascii: "Z") {
            return nil
        }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        guard seconds != -1 || (year == 1969) else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}
