public import BrowserAccess
import BrowserModel
public import BrowserRecords
public import Logging

/// What following tokens needs of the database.
public protocol StoredTokenReading: Sendable {
    /// Every stored API token (hashes only).
    func storedTokens() async throws -> [TokenRecord]
    /// One stored token, if it exists.
    func storedToken(_ id: String) async throws -> TokenRecord?
}

/// Keeps this instance's ``TokenStore`` the same as the database's tokens, which any instance may
/// issue or revoke: everything read again whenever listening for their announcements (re)starts
/// (some may have been missed), and each announcement applied as it comes. A token whose state is
/// unknown (its read failed) is forgotten: safe, since a valid token is read again at the next reload.
public struct TokenFollower: Sendable {
    let tokens: TokenStore
    let stored: any StoredTokenReading
    let logger: Logger

    public init(tokens: TokenStore, stored: any StoredTokenReading, logger: Logger) {
        self.tokens = tokens
        self.stored = stored
        self.logger = logger
    }

    /// Listening (re)started: every stored token read again (kept as it was if the read fails).
    public func reload() async {
        do {
            tokens.replaceAll(try await stored.storedTokens().map(TokenStore.Record.init))
        } catch {
            logger.warning("could not read the stored tokens", metadata: ["error": "\(error)"])
        }
    }

    /// An announcement: a token's id (issued or revoked), or `profile:<id>` (a deleted profile: every
    /// token of it revoked).
    public func changed(_ payload: String) async {
        if payload.hasPrefix("profile:") {
            tokens.revokeAll(of: ProfileID(rawValue: String(payload.dropFirst(8))))
            return
        }
        do {
            if let record = try await stored.storedToken(payload) {
                tokens.restore([TokenStore.Record(record)])
            } else {
                tokens.forget(payload)
            }
        } catch {
            tokens.forget(payload)
        }
    }
}
