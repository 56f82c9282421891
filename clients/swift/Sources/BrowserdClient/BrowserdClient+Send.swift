import Foundation
public import HTTPTypes
import OpenAPIRuntime

/// An answer neither a success nor a problem (``BrowserdClient/send(_:_:json:operationID:expected:)``).
public struct UnexpectedAnswer: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var description: String { "browserd answered \(status) without a problem" }
}

extension BrowserdClient {
    /// Answers read whole up to this size (a tab's answer is a few hundred bytes).
    static let sentAnswerLimit = 4 * 1024 * 1024

    /// One JSON request as bytes, through the middlewares and the transport of ``api`` (its token, a
    /// renderer's fence, problems thrown as ``BrowserdProblem``), without the generated client's
    /// conversions: for a caller whose hot path pays for them on every request (a renderer's reports
    /// of its pages, two a navigation; figures in docs/benchmarks.md). The caller keeps to
    /// `openapi.yaml` itself (and tests that it does).
    /// - Parameters:
    ///   - path: from the server's base URL, e.g. `/v1/tabs/t1/navigate`, already encoded.
    ///   - body: the request's JSON (nil: none).
    /// - Returns: the answer's body, when its status is `expected`.
    /// - Throws: ``BrowserdProblem`` for a problem answer, ``UnexpectedAnswer`` for another status.
    public func send(
        _ method: HTTPRequest.Method, _ path: String, json body: [UInt8]?, operationID: String, expected: Int = 200
    ) async throws -> [UInt8] {
        var request = HTTPRequest(method: method, scheme: nil, authority: nil, path: path)
        if body != nil { request.headerFields[.contentType] = "application/json; charset=utf-8" }
        request.headerFields[.accept] = "application/json"
        var next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?) = { [requests] in
            try await requests.send($0, body: $1, baseURL: $2, operationID: operationID)
        }
        // The first middleware outermost, as the generated client runs them.
        for middleware in middlewares.reversed() {
            let inner = next
            next = { try await middleware.intercept($0, body: $1, baseURL: $2, operationID: operationID, next: inner) }
        }
        let (response, answer) = try await next(request, body.map { HTTPBody($0) }, server)
        guard response.status.code == expected else { throw UnexpectedAnswer(status: response.status.code) }
        guard let answer else { return [] }
        return try await [UInt8](collecting: answer, upTo: Self.sentAnswerLimit)
    }
}
