import Foundation

/// A compact binary form of a history: a version byte, the count, then per entry the URL, title and
/// transition as length-prefixed UTF-8 and the timestamp's exact seconds since 1970 (the Double's bits).
package enum HistoryCodec {
    package struct Malformed: Error {}

    package static func encode(_ entries: [HistoryEntryRecord]) -> [UInt8] {
        var out: [UInt8] = [1]
        append(UInt64(entries.count), to: &out)
        for entry in entries {
            appendString(entry.url, to: &out)
            appendString(entry.title, to: &out)
            appendString(entry.transition, to: &out)
            append(entry.timestamp.timeIntervalSince1970.bitPattern, to: &out)
        }
        return out
    }

    package static func decode(_ bytes: [UInt8]) throws -> [HistoryEntryRecord] {
        var position = 0
        guard bytes.first == 1 else { throw Malformed() }
        position = 1
        func read() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard position < bytes.count, shift < 64 else { throw Malformed() }
                let byte = bytes[position]
                position += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }
        func readString() throws -> String {
            let length = Int(try read())
            guard length >= 0, position + length <= bytes.count else { throw Malformed() }
            defer { position += length }
            return String(decoding: bytes[position..<(position + length)], as: UTF8.self)
        }
        let count = Int(try read())
        guard count <= bytes.count else { throw Malformed() }
        var entries: [HistoryEntryRecord] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let url = try readString()
            let title = try readString()
            let transition = try readString()
            let seconds = Double(bitPattern: try read())
            entries.append(
                HistoryEntryRecord(
                    url: url, title: title, transition: transition,
                    timestamp: Date(timeIntervalSince1970: seconds)))
        }
        guard position == bytes.count else { throw Malformed() }
        return entries
    }

    private static func append(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        repeat {
            var byte = UInt8(v & 0x7F)
            v >>= 7
            if v != 0 { byte |= 0x80 }
            out.append(byte)
        } while v != 0
    }

    private static func appendString(_ string: String, to out: inout [UInt8]) {
        let utf8 = Array(string.utf8)
        append(UInt64(utf8.count), to: &out)
        out.append(contentsOf: utf8)
    }
}
