#if PostgreSQL
    public import BrowserModel

    /// Test-only: the cluster's tests write profile ids as literals (`"p1"`).
    extension ProfileID: ExpressibleByStringLiteral {
        public init(stringLiteral value: String) { self.init(rawValue: value) }
    }
#endif
