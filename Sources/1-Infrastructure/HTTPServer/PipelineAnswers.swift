import Synchronization

/// The answers of one pipeline as they come, from any thread; the whole answer once the last came.
final class PipelineAnswers: Sendable {
    private struct State {
        var answers: [HTTPResponse?]
        var missing: Int
        /// Called with the whole answer once every answer came (set when some had to wait).
        var onComplete: (@Sendable (HTTPResponse) -> Void)?
        var taken = false
    }

    private let heads: [Bool]
    private let serverHeaders: HTTPHeaders
    private let state: Mutex<State>

    /// - Parameter heads: for each enclosed request, whether it is a `HEAD` (its answer has no body).
    init(heads: [Bool], serverHeaders: HTTPHeaders) {
        self.heads = heads
        self.serverHeaders = serverHeaders
        state = Mutex(State(answers: Array(repeating: nil, count: heads.count), missing: heads.count))
    }

    /// The answer of enclosed request `index` (once).
    func set(_ index: Int, _ answer: HTTPResponse) {
        let deliver = state.withLock { state -> (@Sendable (HTTPResponse) -> Void)? in
            guard state.answers[index] == nil else { return nil }
            state.answers[index] = answer
            state.missing -= 1
            guard state.missing == 0, let onComplete = state.onComplete, !state.taken else { return nil }
            state.taken = true
            return onComplete
        }
        if let deliver { deliver(whole()) }
    }

    /// The whole answer when every enclosed one is there already (then it is taken).
    func takeIfComplete() -> HTTPResponse? {
        let complete = state.withLock { state -> Bool in
            guard state.missing == 0, !state.taken else { return false }
            state.taken = true
            return true
        }
        return complete ? whole() : nil
    }

    /// Calls `deliver` with the whole answer once every enclosed one came (at once if they all have).
    func whenComplete(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        let now = state.withLock { state -> Bool in
            guard state.missing > 0 else {
                defer { state.taken = true }
                return !state.taken
            }
            state.onComplete = deliver
            return false
        }
        if now { deliver(whole()) }
    }

    /// The answers enclosed in order, as one `200` answer.
    private func whole() -> HTTPResponse {
        let answers = state.withLock { $0.answers }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(
            answers.reduce(0) { total, answer in
                guard let answer else { return total }
                switch answer.body {
                case .bytes(let body): return total + body.count + 256
                case .shared(let shared): return total + shared.body.count + 256
                case .stream: return total + 512
                }
            })
        for (index, answer) in answers.enumerated() {
            guard let answer else { continue }
            EnclosedPipeline.append(answer, toHead: heads[index], serverHeaders: serverHeaders, to: &bytes)
        }
        return HTTPResponse(status: 200, contentType: EnclosedPipeline.responseType, body: bytes)
    }
}
