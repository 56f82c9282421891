import ArgumentParser

/// The `browserd` command: `serve` (the default) runs the service; `healthcheck` probes it.
@main
struct Browserd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browserd",
        abstract: "Serves the model of a multi-window web browser over HTTP.",
        discussion: """
            Every option can also be set through an environment variable named BROWSERD_ and the \
            option's name in capitals with underscores (e.g. --data-dir → BROWSERD_DATA_DIR). \
            The command line wins over the environment, which wins over the default.
            """,
        version: "browserd 0.1.0",
        subcommands: [Serve.self, Healthcheck.self],
        defaultSubcommand: Serve.self
    )
}
