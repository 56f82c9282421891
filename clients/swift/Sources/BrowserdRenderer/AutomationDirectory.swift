import NIOConcurrencyHelpers

/// What automation clients read on the pipe's and the gateway's event loop, without
/// waiting for the renderer's actor: Chromium's connection now, the profiles the renderer serves and
/// the browser context of its incognito profile. The renderer writes it as they change.
public final class AutomationDirectory: Sendable {
    private struct State {
        var connection: DevToolsConnection?
        var profile: String
        var incognito: String?
        /// The incognito profiles' browser contexts in the Chromium running now.
        var contexts: [String: String] = [:]
    }
    private let state: NIOLockedValueBox<State>

    public init(profile: String) { state = NIOLockedValueBox(State(profile: profile)) }

    public var connection: DevToolsConnection? {
        get { state.withLockedValue { $0.connection } }
        set { state.withLockedValue { $0.connection = newValue } }
    }

    /// The incognito profile followed now (nil: none).
    public var incognito: String? {
        get { state.withLockedValue { $0.incognito } }
        set { state.withLockedValue { $0.incognito = newValue } }
    }

    /// The context made for an incognito profile's pages (nil: gone, or Chromium ended).
    public func setContext(_ context: String?, of profile: String) { state.withLockedValue { $0.contexts[profile] = context } }

    public func clearContexts() { state.withLockedValue { $0.contexts = [:] } }

    /// The browser contexts a client of `profile` may see (nil: not a profile served here).
    public func scope(of profile: String) -> AutomationFilter.Scope? {
        state.withLockedValue { state in
            if profile == state.profile { return .regular(incognito: Set(state.contexts.values)) }
            if profile == state.incognito { return .incognito(state.contexts[profile]) }
            return nil
        }
    }
}
