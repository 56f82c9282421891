import Crypto
import TestSupport
import Testing

@testable import ClusterCore

/// A forwarded request proves its sender knows the cluster's secret without carrying it: the proof
/// holds for that request only, from that instance, near its time, under that secret.
@Suite(.offThePool) struct PeerProofTests {
    let proof = PeerProof(secret: Array("a cluster secret of some length".utf8))
    let body = Array(#"{"url":"https://a.example/"}"#.utf8)

    @Test func aProofHoldsForItsRequestAlone() {
        let value = proof.make(method: "POST", path: "/v1/browsers/w1/tabs", body: body, from: "i1", at: 1_000)
        #expect(!value.contains("a cluster secret"))
        #expect(proof.verify(value, method: "POST", path: "/v1/browsers/w1/tabs", body: body, from: "i1", now: 1_000))
        #expect(proof.verify(value, method: "POST", path: "/v1/browsers/w1/tabs", body: body, from: "i1", now: 1_060))
        // Anything else of the request, another sender, another time, another secret: no.
        #expect(!proof.verify(value, method: "PUT", path: "/v1/browsers/w1/tabs", body: body, from: "i1", now: 1_000))
        #expect(!proof.verify(value, method: "POST", path: "/v1/browsers/w2/tabs", body: body, from: "i1", now: 1_000))
        #expect(!proof.verify(value, method: "POST", path: "/v1/browsers/w1/tabs", body: body + [32], from: "i1", now: 1_000))
        #expect(!proof.verify(value, method: "POST", path: "/v1/browsers/w1/tabs", body: body, from: "i2", now: 1_000))
        #expect(!proof.verify(value, method: "POST", path: "/v1/browsers/w1/tabs", body: body, from: "i1", now: 1_061))
        #expect(!proof.verify(value, method: "POST", path: "/v1/browsers/w1/tabs", body: body, from: "i1", now: 939))
        let other = PeerProof(secret: Array("another secret of some length".utf8))
        #expect(!other.verify(value, method: "POST", path: "/v1/browsers/w1/tabs", body: body, from: "i1", now: 1_000))
    }

    /// The proof's HMAC is keyed once and copied per request: it must be HMAC-SHA256 itself, for
    /// keys shorter than a block, of one block and longer (hashed first), as Crypto computes it.
    @Test func theKeyedHMACIsCryptosHMAC() {
        // RFC 4231 test case 2: key "Jefe".
        let rfc = PeerProof.hmac(secret: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        let hex: String = rfc.map { byte -> String in byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
        #expect(hex == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        for keyLength in [0, 1, 31, 63, 64, 65, 200] {
            let secret = (0..<keyLength).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            for message in [[], Array("browserd-peer-1\n5\ni1\nGET\n/v1/tabs/t1\n".utf8), [UInt8](repeating: 0xab, count: 1000)] {
                let expected = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
                #expect(PeerProof.hmac(secret: secret, message: message) == expected, "key of \(keyLength) bytes, message of \(message.count)")
            }
        }
    }

    @Test func malformedProofsAreRefused() {
        let good = proof.make(method: "GET", path: "/v1/tabs/t1", body: [], from: "i1", at: 5)
        let signature = good.split(separator: ",")[1]
        for bad in [
            "", "t=5", "s=00", "t=x,\(signature)", "t=5,s=", "t=5,s=zz", "t=5,\(signature)0", "t=5,s=" + String(repeating: "0", count: 64),
            "\(signature),t=5", "secret",
        ] {
            #expect(!proof.verify(bad, method: "GET", path: "/v1/tabs/t1", body: [], from: "i1", now: 5), "\(bad)")
        }
        #expect(proof.verify(good, method: "GET", path: "/v1/tabs/t1", body: [], from: "i1", now: 5))
    }

    /// Reads' proofs are made and checked once per second and request: the memo gives back what
    /// the computation gave, remembers only valid proofs, forgets them when the second changes and
    /// holds at most its capacity.
    @Test func aReadsProofIsComputedOncePerSecond() {
        let memo = PeerProofMemo()
        let key = PeerProofMemo.key(method: "GET", path: "/v1/browsers/w1", from: "i1")
        var made = 0
        func make() -> String {
            made += 1
            return proof.make(method: "GET", path: "/v1/browsers/w1", body: [], from: "i1", at: 1_000)
        }
        let value = memo.proof(for: key, at: 1_000, make: make)
        #expect(memo.proof(for: key, at: 1_000, make: make) == value && made == 1)
        #expect(memo.proof(for: PeerProofMemo.key(method: "HEAD", path: "/v1/browsers/w1", from: "i1"), at: 1_000, make: make) == value)
        #expect(made == 2, "another read has its own")
        _ = memo.proof(for: key, at: 1_001, make: make)
        #expect(made == 3, "another second, another proof")

        var checked = 0
        func check(_ valid: Bool) -> () -> Bool {
            {
                checked += 1
                return valid
            }
        }
        #expect(!memo.isValid("t=1000,s=00", for: key, at: 1_000, check: check(false)))
        #expect(!memo.isValid("t=1000,s=00", for: key, at: 1_000, check: check(false)))
        #expect(checked == 2, "a refused proof is checked every time")
        #expect(memo.isValid(value, for: key, at: 1_000, check: check(true)))
        #expect(memo.isValid(value, for: key, at: 1_000, check: check(false)) && checked == 3, "remembered")
        #expect(!memo.isValid(value, for: PeerProofMemo.key(method: "GET", path: "/v1/browsers/w2", from: "i1"), at: 1_000, check: check(false)))
        #expect(!memo.isValid(value, for: key, at: 1_001, check: check(false)), "forgotten the next second")

        for index in 0..<(PeerProofMemo.capacity + 10) {
            #expect(memo.isValid("v\(index)", for: "k\(index)", at: 2_000, check: { true }))
        }
        #expect(!memo.isValid("v\(PeerProofMemo.capacity + 5)", for: "k\(PeerProofMemo.capacity + 5)", at: 2_000, check: { false }))
        #expect(memo.isValid("v5", for: "k5", at: 2_000, check: { false }))
    }
}
