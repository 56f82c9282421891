import TestSupport
import Testing

@testable import FirefoxSession

/// Firefox's mozLz4 framing: the magic, the claimed size (bounded before anything is allocated), one
/// LZ4 block decoded by liblz4; every malformed file says what is wrong.
@Suite(.computing) struct MozLz4Tests {
    let json = Array(#"{"windows":[{"tabs":[{"entries":[{"url":"https://a.example/","title":"A"}],"index":1}]}]}"#.utf8)

    @Test func aFramedFileDecodesToItsJSON() throws {
        let framed = MozLz4.encode(json)
        #expect(Array(framed.prefix(8)) == Array("mozLz40\0".utf8))
        #expect(try MozLz4.decode(framed, limit: 1 << 20) == json)
    }

    @Test func anotherMagicIsRefused() {
        var framed = MozLz4.encode(json)
        framed[3] = UInt8(ascii: "X")
        #expect(throws: FirefoxSessionError.badMagic) { try MozLz4.decode(framed, limit: 1 << 20) }
        #expect(throws: FirefoxSessionError.self) { try MozLz4.decode(Array("mozLz".utf8), limit: 1 << 20) }
    }

    @Test func aTruncatedHeaderOrBlockIsRefused() {
        let framed = MozLz4.encode(json)
        #expect {
            try MozLz4.decode(Array(framed.prefix(10)), limit: 1 << 20)
        } throws: { error in
            "\(error)".contains("header stops after 10 bytes")
        }
        #expect {
            try MozLz4.decode(Array(framed.prefix(12)), limit: 1 << 20)
        } throws: { error in
            "\(error)".contains("no block follows")
        }
        // The block cut short: liblz4 stops, or the size does not match.
        #expect(throws: FirefoxSessionError.self) { try MozLz4.decode(Array(framed.dropLast(5)), limit: 1 << 20) }
    }

    @Test func aClaimOverTheLimitIsRefusedBeforeAnyAllocation() {
        // 4 GB claimed in the header of a tiny file: refused on the claim alone.
        var framed = MozLz4.encode(json)
        framed.replaceSubrange(8..<12, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: FirefoxSessionError.tooLarge(claimed: 0xFFFF_FFFF, limit: 256 << 20)) {
            try MozLz4.decode(framed, limit: 256 << 20)
        }
        // Under the limit but more than the block can hold: a lie, refused without its buffer.
        framed.replaceSubrange(8..<12, with: [0x00, 0x00, 0x00, 0x01])
        #expect {
            try MozLz4.decode(framed, limit: 256 << 20)
        } throws: { error in
            "\(error)".contains("more than") && "\(error)".contains("bytes of block can hold")
        }
    }

    @Test func aClaimThatDisagreesWithTheBlockIsRefused() {
        var framed = MozLz4.encode(json)
        let smaller = UInt32(json.count - 1)
        framed.replaceSubrange(8..<12, with: [UInt8(smaller & 0xff), UInt8(smaller >> 8 & 0xff), 0, 0])
        #expect(throws: FirefoxSessionError.self) { try MozLz4.decode(framed, limit: 1 << 20) }
        let larger = UInt32(json.count + 1)
        framed.replaceSubrange(8..<12, with: [UInt8(larger & 0xff), UInt8(larger >> 8 & 0xff), 0, 0])
        #expect {
            try MozLz4.decode(framed, limit: 1 << 20)
        } throws: { error in
            "\(error)".contains("claims \(larger) bytes; the block decodes to \(json.count)")
        }
    }
}
