#if PostgreSQL
    import Testing

    @testable import BrowserCluster

    /// A forwarded request proves its sender knows the cluster's secret without carrying it: the proof
    /// holds for that request only, from that instance, near its time, under that secret.
    @Suite struct PeerProofTests {
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
    }
#endif
