import ArgumentParser
import BrowserdClient
import Foundation
import TabStripCore

/// `browserd-tabs --server URL --window ID`: a terminal tab strip of one browserd window, drawn from
/// its event stream and redrawn live; keys open, close, activate, move and pin tabs.
@main
struct BrowserdTabs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browserd-tabs",
        abstract: "A live terminal tab strip of one browserd window.",
        discussion: "Keys: j/k or the arrows move the cursor, Enter activates, n opens a tab, x closes, [ and ] reorder, p pins, q quits.")

    @Option(help: "The server's base URL.")
    var server = "http://127.0.0.1:8080"

    @Option(help: "The window (browser) id to show.")
    var window: String

    @Option(help: "A bearer token (default: $BROWSERD_TOKEN; none while authentication is off).")
    var token: String?

    func run() async throws {
        guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
            throw ValidationError("--server must be an http or https URL")
        }
        let client = BrowserdClient(server: url, token: token ?? ProcessInfo.processInfo.environment["BROWSERD_TOKEN"])
        let terminal = Terminal()
        defer { terminal.restore() }
        let app = TabsApp(client: client, terminal: terminal, windowID: window)
        await app.redraw()
        let events = Task {
            do {
                for try await event in client.windowEvents(window) { await app.apply(event.payload) }
            } catch {
                await app.fail(error)
            }
        }
        defer { events.cancel() }
        for await bytes in terminal.input() {
            for key in Key.parse(bytes) {
                guard await app.handle(key) else { return }
            }
        }
    }
}
