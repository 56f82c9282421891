import Foundation
import TestSupport
import Testing

@testable import JSONWriter

/// The strict JSON parser request bodies go through (RFC 8259): what it accepts, what it refuses and
/// where it says the error is.
@Suite(.computing) struct JSONParserTests {
    private func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    private func refuses(_ text: String, _ message: String? = nil, at offset: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let value = try parse(text)
            Issue.record("accepted \(text.debugDescription) as \(value)", sourceLocation: sourceLocation)
        } catch let error as JSONParser.SyntaxError {
            if let message { #expect(error.message.contains(message), "\(error.message)", sourceLocation: sourceLocation) }
            if let offset { #expect(error.offset == offset, "offset \(error.offset)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func scalarsAndContainers() throws {
        #expect(try parse("null") == .null)
        #expect(try parse(" true ") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse("0") == .number(0, isInteger: true))
        #expect(try parse("-12") == .number(-12, isInteger: true))
        #expect(try parse("1.5e2") == .number(150, isInteger: false))
        #expect(try parse("2E-1") == .number(0.2, isInteger: false))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object([]))
        #expect(
            try parse(#"{"a":[1,{"b":null}],"c":"d"}"#)
                == .object([("a", .array([.number(1, isInteger: true), .object([("b", .null)])])), ("c", .string("d"))]))
        // Members keep their order; a member named twice is refused (which one would count?).
        if case .object(let members) = try parse(#"{"z":1,"a":2}"#) {
            #expect(members.map(\.key) == ["z", "a"])
        } else {
            Issue.record("not an object")
        }
        refuses(#"{"z":1,"a":2,"z":3}"#, "appears twice", at: 16)
    }

    @Test func stringEscapesAndUnicode() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{c}\n\r\t"))
        #expect(try parse(#""\u00e9\u4e2d""#) == .string("é中"))
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse("\"caf\u{e9} 😀\"") == .string("café 😀"))
    }

    @Test func refusesWhatRFC8259Refuses() {
        refuses("", "end")
        refuses("   ")
        refuses("nul")
        refuses("True")
        refuses("01")
        refuses("1.")
        refuses(".5")
        refuses("-")
        refuses("1e")
        refuses("+1")
        refuses("NaN")
        refuses("[1,]")
        refuses("[1 2]")
        refuses(#"{"a":1,}"#)
        refuses(#"{"a" 1}"#)
        refuses(#"{a:1}"#)
        refuses(#"{"a":1} x"#, at: 8)
        refuses("\"tab\there\"")
        refuses(#""\x""#)
        refuses(#""\u12""#)
        refuses(#""\ud83d""#)
        refuses(#""\ude00""#)
        refuses(#""unterminated"#)
        refuses("'single'")
    }

    @Test func depthIsLimited() throws {
        // The top value and 32 levels inside it.
        let ok = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(throws: Never.self) { try parse(ok) }
        refuses(String(repeating: "[", count: 34) + String(repeating: "]", count: 34), "nested deeper than 32 levels")
        // A hostile nesting is refused without recursing through it.
        refuses(String(repeating: "[", count: 100_000))
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: JSONParser.SyntaxError.self) { try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
        #expect(throws: JSONParser.SyntaxError.self) { try JSONParser.parse([0x22, 0xC3, 0x22]) }
    }

    /// The elements of a top-level member's array, as the bytes they are written with (a list relayed
    /// between instances); a same-named member deeper down is not it.
    @Test func arrayElementsAreSpannedExactly() throws {
        let text = #"{"note":{"items":[9]},"items":[ {"id":"a","n":[1,2]} , "b,]" ,3 ],"nextCursor":null}"#
        let bytes = Array(text.utf8)
        let (value, spans) = try JSONParser.parse(bytes, spanning: "items")
        #expect(spans.map { String(decoding: bytes[$0], as: UTF8.self) } == [#"{"id":"a","n":[1,2]}"#, #""b,]""#, "3"])
        #expect(value["items"]?.array?.count == 3 && value["nextCursor"] == .null && value["note"]?["items"]?.array?.count == 1)
        #expect(try JSONParser.parse(Array(#"{"other":[1]}"#.utf8), spanning: "items").spans.isEmpty)
    }

    @Test func accessorsReadWhatTheyName() throws {
        let value = try JSONParser.parse(Array(#"{"s":"x","b":true,"i":3,"d":1.5,"a":[]}"#.utf8))
        #expect(value["s"]?.string == "x" && value["b"]?.bool == true && value["i"]?.int == 3)
        #expect(value["d"]?.int == nil && value["d"]?.double == 1.5 && value["a"]?.array?.isEmpty == true && value["z"] == nil)
    }

    /// Timestamps read back exactly as the writer writes them.
    @Test func timestampsRoundTrip() {
        let date = Date(timeIntervalSince1970: 1_795_000_000.123)
        let text = JSONText.timestamp(date)
        #expect(JSONText.date(fromTimestamp: text).map { ($0.timeIntervalSince1970 * 1000).rounded() } == 1_795_000_000_123)
        #expect(JSONText.date(fromTimestamp: "2026-11-25T10:00:00Z")?.timeIntervalSince1970 == 1_795_600_800)
        for bad in ["", "2026-11-25", "2026-11-25T10:00:00", "2026-13-x5T10:00:00Z", "2026-11-25T10:00:00.Z"] {
            #expect(JSONText.date(fromTimestamp: bad) == nil, "\(bad)")
        }
    }
}
