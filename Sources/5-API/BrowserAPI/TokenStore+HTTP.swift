public import BrowserAccess
public import BrowserModel
import Foundation
public import HTTPServer

extension TokenStore {
    /// The profile whose token `request` carries as `Authorization: Bearer …`, if it carries one.
    public func tokenProfile(of request: HTTPRequest) -> ProfileID? {
        guard let header = request.headers["Authorization"], header.lowercased().hasPrefix("bearer "),
            case .profile(let own)? = principal(for: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces))
        else { return nil }
        return own
    }
}
