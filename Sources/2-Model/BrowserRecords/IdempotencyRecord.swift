public import Dispatch
public import Foundation

/// The stored answer to a request that carried an `Idempotency-Key`, committed in the same
/// transaction as the change the request made, so a retry after a crash gets this answer.
public struct IdempotencyRecord: Sendable, Equatable {
    /// How long a key is kept: 24 hours after its first use.
    public static let lifetime: TimeInterval = 24 * 3600

    /// The caller's scope and the key, e.g. `"admin\n8e03978e"`.
    public var key: String
    /// SHA-256 of the request's method, path and body.
    public var fingerprint: [UInt8]
    public var status: Int
    /// Header fields of the answer, in order.
    public var headers: [HeaderField]
    public var body: [UInt8]
    public var createdAt: Date

    public struct HeaderField: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(key: String, fingerprint: [UInt8], status: Int, headers: [HeaderField], body: [UInt8], createdAt: Date) {
        self.key = key
        self.fingerprint = fingerprint
        self.status = status
        self.headers = headers
        self.body = body
        self.createdAt = createdAt
    }
}

/// The answer to an idempotent request that is not known yet when its change is queued: the
/// request's handler gives it right after the change is made, and the writer waits for it before
/// committing that change, so change and answer commit together. (Its implementation, a one-shot
/// slot, lives with the idempotent request in BrowserServices.)
public protocol AwaitedAnswer: Sendable {
    /// Blocks until the answer is given or `timeout` passes (then no answer is kept); nil: keep none.
    func wait(timeout: DispatchTimeInterval) -> IdempotencyRecord?
}
