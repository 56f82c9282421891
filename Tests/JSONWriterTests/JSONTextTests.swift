import Foundation
import JSONWriter
import TestSupport
import Testing

/// The JSON writer's output is valid JSON that says exactly what was written: checked byte for byte
/// and by reading it back with Foundation's parser.
@Suite(.computing) struct JSONTextTests {
    private func text(_ build: (inout JSONText) -> Void) -> String {
        var json = JSONText()
        build(&json)
        return String(decoding: json.bytes, as: UTF8.self)
    }

    private func parsed(_ json: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
    }

    @Test func commasAndNesting() {
        #expect(
            text {
                $0.beginObject()
                $0.endObject()
            } == "{}")
        #expect(
            text {
                $0.beginArray()
                $0.endArray()
            } == "[]")
        let nested = text { json in
            json.beginObject()
            json.member("a", 1)
            json.key("b")
            json.beginArray()
            json.value(true)
            json.null()
            json.beginObject()
            json.endObject()
            json.value("x")
            json.endArray()
            json.member("c", nil as String?)
            json.member("d", "e" as String?)
            json.key("raw")
            json.raw(Array(#"{"k":[1]}"#.utf8))
            json.endObject()
        }
        #expect(nested == #"{"a":1,"b":[true,null,{},"x"],"c":null,"d":"e","raw":{"k":[1]}}"#)
    }

    @Test func stringsAreEscapedPerRFC8259() throws {
        let samples = ["plain", "quote \" backslash \\ slash /", "\n\r\t\u{8}\u{c}", "\u{0}\u{1f}\u{7f}", "é中😀", "\u{2028}\u{2029}", ""]
        for sample in samples {
            let json = text { $0.value(sample) }
            #expect(try parsed(json) as? String == sample, "\(json)")
            #expect(!json.utf8.contains { $0 < 0x20 }, "no raw control characters in \(json.debugDescription)")
        }
        #expect(text { $0.value("a\"b\\c\n\u{1}") } == #""a\"b\\c\n\u0001""#)
    }

    @Test func numbers() throws {
        #expect(text { $0.value(0) } == "0")
        #expect(text { $0.value(-42) } == "-42")
        #expect(text { $0.value(Int.max) } == "\(Int.max)")
        #expect(text { $0.value(2.0) } == "2", "integral doubles have no fraction")
        #expect(text { $0.value(0.25) } == "0.25")
        #expect(text { $0.value(-1e-7) } == "-1e-07")
        #expect(try parsed(text { $0.value(1e300) }) as? Double == 1e300)
        #expect(try parsed(text { $0.value(123456.789) }) as? Double == 123456.789)
        #expect(text { $0.value(Double.nan) } == "null", "JSON has no NaN")
        #expect(text { $0.value(Double.infinity) } == "null")
    }

    @Test func timestampsAreRFC3339WithMilliseconds() {
        #expect(JSONText.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        // The nearest millisecond (a floor would write a time read from a timestamp one millisecond
        // early whenever its Double falls just below it).
        #expect(JSONText.timestamp(Date(timeIntervalSince1970: 1_795_369_171.123_9)) == "2026-11-22T17:39:31.124Z")
        #expect(JSONText.timestamp(Date(timeIntervalSince1970: 1_795_369_171.123_4)) == "2026-11-22T17:39:31.123Z")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for seconds in [1.5, 951_782_400.007, 4_102_444_799.999] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(JSONText.timestamp(date) == formatter.string(from: date), "\(seconds)")
        }
    }
}
