import Foundation
import HTTPServer

/// The inspector page (`/inspector/`, with `/` and `/inspector` sending there): plain HTML, CSS and
/// JavaScript compiled into the binary, served with an `ETag` (revalidated, `304` when unchanged)
/// and a Content-Security-Policy that allows nothing but this server — no other origin, no inline
/// script or style, no frames.
struct InspectorRoutes {
    /// What the page may load and connect to: this server only — its script, style, API calls and
    /// event streams (`connect-src`), and the images it shows: its own favicon, tabs' favicons on this
    /// server, snapshots fetched with the token and shown from `blob:` URLs, and `data:` favicons
    /// (`paintFavicon` in inspector.js shows a tab's favicon only when it is one of these).
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        + "img-src 'self' blob: data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    struct Asset {
        let contentType: String
        let bytes: [UInt8]
        let etag: String

        init(_ contentType: String, _ bytes: [UInt8]) {
            self.contentType = contentType
            self.bytes = bytes
            // FNV-1a over the bytes: a stable tag for content compiled into this binary.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            etag = "\"\(String(hash, radix: 16))\""
        }
    }

    static let page = Asset("text/html; charset=utf-8", EmbeddedFiles.inspectorPage)
    static let assets: [String: Asset] = [
        "inspector.js": Asset("text/javascript; charset=utf-8", EmbeddedFiles.inspectorScript),
        "inspector.css": Asset("text/css; charset=utf-8", EmbeddedFiles.inspectorStyle),
        "favicon.svg": Asset("image/svg+xml", EmbeddedFiles.favicon),
    ]

    func register(in router: inout Router) {
        router.get("/") { _ in Self.redirect("/inspector/") }
        router.get("/inspector") { request in
            // Keep the deep link (?browser=, ?profile=): each value is an id, sent back as given.
            let query = request.query.filter { $0.name == "browser" || $0.name == "profile" }
                .map { "\($0.name)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
            return Self.redirect("/inspector/" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
        }
        router.get("/inspector/") { request in Self.serve(Self.page, request) }
        router.get("/inspector/{asset}") { request in
            guard let asset = Self.assets[request.parameter("asset")] else {
                throw HTTPError.notFound("There is no inspector file \(request.parameter("asset")).")
            }
            return Self.serve(asset, request)
        }
    }

    static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 302, headers: ["Location": location, "Cache-Control": "no-cache"])
    }

    static func serve(_ asset: Asset, _ request: HTTPRequest) -> HTTPResponse {
        var headers: HTTPHeaders = [
            "ETag": asset.etag, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Content-Security-Policy": contentSecurityPolicy,
        ]
        if let tags = request.headers["If-None-Match"],
            tags.split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces) == asset.etag || $0.trimmingCharacters(in: .whitespaces) == "*"
            })
        {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.set("Content-Type", asset.contentType)
        return HTTPResponse(status: 200, headers: headers, body: .bytes(asset.bytes))
    }
}
