#if PostgreSQL
    import BrowserPostgres
    import TestSupport
    import Testing

    /// `--database-url` as an operator writes it: what is understood, what is refused and why, and that
    /// no description ever shows the password.
    @Suite(.offThePool) struct DatabaseURLTests {
        @Test func aFullURLIsUnderstood() throws {
            let url = try DatabaseURL("postgres://browserd:s3cret@db.example:6543/tabs?sslmode=require")
            #expect(url.username == "browserd")
            #expect(url.password == "s3cret")
            #expect(url.host == "db.example")
            #expect(url.port == 6543)
            #expect(url.database == "tabs")
            #expect(url.tls == .require)
        }

        @Test func defaultsAreLibpqs() throws {
            let url = try DatabaseURL("postgresql://alice@localhost")
            #expect(url.port == 5432)
            #expect(url.database == "alice", "the database defaults to the user's name")
            #expect(url.tls == .prefer)
            #expect(url.password == nil)
        }

        @Test func anIPv6HostAndEncodedPartsRoundTrip() throws {
            let url = try DatabaseURL("postgres://us%40er:p%2Fw%3Ad@[::1]:5433/my%20db?sslmode=disable")
            #expect(url.host == "::1")
            #expect(url.username == "us@er")
            #expect(url.password == "p/w:d")
            #expect(url.database == "my db")
            #expect(try DatabaseURL(url.absoluteString) == url)
        }

        @Test func theDescriptionNeverShowsThePassword() throws {
            let url = try DatabaseURL("postgres://browserd:hunter2@db:5432/tabs")
            #expect(!url.description.contains("hunter2"))
            #expect(url.description.contains(":***@"))
            #expect(!String(describing: url).contains("hunter2"))
        }

        @Test(arguments: [
            ("not a url at all", "not a URL"),
            ("mysql://u@h/db", "the scheme must be postgres"),
            ("postgres:///db", "no host"),
            ("postgres://h/db", "no user name"),
            ("postgres://u@h:70000/db", "out of range"),
            ("postgres://u@h/a/b", "one database name"),
            ("postgres://u@h/db?sslmode=verify-full", "sslmode must be"),
            ("postgres://u:pw@h/db?application_name=x", "unknown parameter application_name"),
        ])
        func whatCannotBeUsedIsRefusedSayingWhy(text: String, why: String) {
            do {
                _ = try DatabaseURL(text)
                Issue.record("\(text) was accepted")
            } catch {
                let message = "\(error)"
                #expect(message.contains(why), "\(message)")
                #expect(message.hasPrefix("--database-url: "))
                #expect(!message.contains("pw@"), "a refusal never echoes the password")
            }
        }
    }
#endif
