import TestSupport
import Testing

@testable import HTTPServer

/// The decision alone (Go 1.25's `http.CrossOriginProtection` rules), one row per case.
@Suite(.computing) struct CrossOriginProtectionTests {
    let protection = CrossOriginProtection { $0 == "https://ui.example" }

    @Test(
        arguments: [
            // method, Sec-Fetch-Site, Origin, Host, allowed
            ("GET", "cross-site", "https://evil.example", "localhost:8080", true),
            ("HEAD", "cross-site", "https://evil.example", "localhost:8080", true),
            ("OPTIONS", "cross-site", "https://evil.example", "localhost:8080", true),
            ("POST", nil, nil, "localhost:8080", true),
            ("POST", "same-origin", "http://localhost:8080", "localhost:8080", true),
            ("POST", "none", nil, "localhost:8080", true),
            ("POST", "SAME-ORIGIN", nil, "localhost:8080", true),
            ("POST", "cross-site", "https://evil.example", "localhost:8080", false),
            ("POST", "same-site", "http://other.localhost:8080", "localhost:8080", false),
            ("PATCH", "cross-site", nil, "localhost:8080", false),
            ("DELETE", "cross-site", "https://ui.example", "localhost:8080", true),
            ("POST", nil, "http://localhost:8080", "localhost:8080", true),
            ("POST", nil, "http://LOCALHOST:8080", "localhost:8080", true),
            ("POST", nil, "http://localhost:9090", "localhost:8080", false),
            ("PUT", nil, "https://evil.example", "localhost:8080", false),
            ("POST", nil, "null", "localhost:8080", false),
            ("POST", nil, "https://ui.example", "localhost:8080", true),
            ("POST", nil, "http://localhost:8080/path", "localhost:8080", false),
        ] as [(String, String?, String?, String?, Bool)])
    func decides(_ method: String, _ site: String?, _ origin: String?, _ host: String?, _ allowed: Bool) {
        let verdict = protection.judge(method: HTTPMethod(method), secFetchSite: site, origin: origin, host: host)
        #expect((verdict == .allowed) == allowed, "\(method) site=\(site ?? "-") origin=\(origin ?? "-")")
    }

    @Test func aRefusalSaysWhy() {
        guard case .refused(let why) = protection.judge(method: .post, secFetchSite: "cross-site", origin: nil, host: "h") else {
            Issue.record("allowed")
            return
        }
        #expect(why.contains("Sec-Fetch-Site: cross-site"))
    }
}
