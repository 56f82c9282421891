import CMicroHTTPD
import Synchronization

// Pipelines of reads enclosed in one request (``EnclosedPipeline``): each enclosed request goes
// through ``HTTPServer/route(_:)``, the routing path of every request on the wire, and their answers
// leave in one answer once all are ready. When every one is ready at once (the common case: cached
// answers, answers from memory), the pipeline is answered without suspending its connection.
extension HTTPServer {
    /// Answers a pipeline the router matched to an ``Responder/enclosing(_:)`` route.
    func answerPipeline(_ request: HTTPRequest, policy: EnclosedPipeline.Policy, context: RequestContext, on connection: OpaquePointer) -> MHD_Result {
        let enclosed: [HTTPRequest]
        do throws(HTTPError) {
            guard policy.admits(request) else {
                throw HTTPError(403, kind: "forbidden", title: "Forbidden", detail: "Only another instance of this cluster may send a pipeline.")
            }
            guard MediaType.isHTTP(request.headers["Content-Type"] ?? "") else {
                throw HTTPError(
                    415, kind: "unsupported-media-type", title: "Unsupported Media Type",
                    detail: "A pipeline says Content-Type: \(EnclosedPipeline.requestType).",
                    headers: ["Accept-Post": EnclosedPipeline.requestType])
            }
            enclosed = try EnclosedPipeline.requests(in: request.body, limit: policy.maxRequests)
        } catch {
            return queue(error.response(instance: request.path), for: context, on: connection)
        }
        let answers = PipelineAnswers(heads: enclosed.map { $0.method == .head }, serverHeaders: configuration.responseHeaders)
        for (index, var one) in enclosed.enumerated() {
            answerEnclosed(&one) { answers.set(index, $0) }
        }
        if let whole = answers.takeIfComplete() { return queue(whole, for: context, on: connection) }
        suspend(context, on: connection)
        answers.whenComplete { whole in
            self.waiting.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(context)) }
            context.deliver(whole)
        }
        return .YES
    }

    /// Answers one enclosed request through the router; `done` is called once, maybe on another
    /// thread (a handler that waits runs in a task).
    private func answerEnclosed(_ request: inout HTTPRequest, done: @escaping @Sendable (HTTPResponse) -> Void) {
        switch route(&request) {
        case .outcome(.answer(let response)):
            done(response)
        case .outcome(.later(let body)):
            let matched = request
            Task {
                do {
                    done(try await body())
                } catch {
                    done(self.errorResponse(error, request: matched))
                }
            }
        case .outcome(.started(let start)):
            start(done)
        case .enclosing:
            done(
                HTTPError(400, kind: "malformed-pipeline", title: "Malformed Pipeline", detail: "A pipeline cannot enclose another.")
                    .response(instance: request.path))
        }
    }
}
