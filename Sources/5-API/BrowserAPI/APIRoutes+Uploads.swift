public import BrowserAccess
public import HTTPServer

// Uploads (a large body: `POST /v1/profiles/import`) are judged from their request head, before a
// slot is taken or a byte of the body is read: who may not upload holds nothing of the server's.
extension APIRoutes {
    /// The API's judgement of an upload's head, for ``LargeBodies/admit``: with authentication on, a
    /// missing or unknown token is 401 and a profile token on an administrator's route is 403, as
    /// the guard would answer once the body arrived; an admitted upload counts as its caller's (the
    /// administrator, or that profile's token). Authentication off: everyone is the administrator.
    public static func uploadAdmission(tokens: TokenStore) -> LargeBodies.Admit {
        { path, header in
            guard tokens.isEnabled else { return .admit(principal: Principal.admin.scope) }
            guard let value = header("Authorization"), value.lowercased().hasPrefix("bearer "),
                let (principal, _) = tokens.identify(String(value.dropFirst(7)).trimmingCharacters(in: .whitespaces))
            else {
                return .refuse(
                    HTTPError(
                        401, kind: "unauthorized", title: "Unauthorized", detail: "Send Authorization: Bearer <token> with the upload's head.",
                        headers: ["WWW-Authenticate": "Bearer realm=\"browserd\""]))
            }
            if principal != .admin, adminOnly.contains("POST \(path)") {
                return .refuse(HTTPError(403, kind: "forbidden", title: "Forbidden", detail: "Only the administrator may do this."))
            }
            return .admit(principal: principal.scope)
        }
    }
}
