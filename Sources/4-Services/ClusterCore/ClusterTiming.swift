/// Every duration of the cluster in one place, derived from `--lease-seconds` where it should be.
///
/// A lease lives `leaseSeconds` on the database's clock. Its holder renews all its leases every
/// third of that, and stops serving them once renewal has failed for `giveUpAfter` (0.8 of a lease):
/// before the database may hand them to another instance, so two instances never serve one profile.
public struct ClusterTiming: Sendable, Equatable {
    /// How long a lease lives without renewal (`--lease-seconds`, default 10).
    public var leaseSeconds: Double
    /// How often the database is probed while it does not answer (and `/readyz` says so).
    public var databaseProbeEvery: Duration = .seconds(2)
    /// The longest a database call may take before the request gets a 503.
    public var databaseCallDeadline: Duration = .seconds(5)
    /// How long connecting to another instance may take before forwarding fails.
    public var forwardConnectTimeout: Duration = .milliseconds(500)
    /// How long a forwarded (non-stream) request may take.
    public var forwardDeadline: Duration = .seconds(60)
    /// How long a pooled connection to another instance stays open unused.
    public var forwardIdleTimeout: Duration = .seconds(60)
    /// How long the check that an unreachable owner's address refuses connections may wait.
    public var refusalProbeTimeout: Duration = .milliseconds(300)

    public init(leaseSeconds: Double = 10) {
        self.leaseSeconds = leaseSeconds
    }

    /// The lease's life.
    public var lease: Duration { .milliseconds(Int64(leaseSeconds * 1000)) }
    /// Every held lease is renewed this often: a third of a lease, so two renewals may fail in a row.
    public var renewEvery: Duration { .milliseconds(Int64(leaseSeconds * 1000 / 3)) }
    /// Renewal failing this long (0.8 of a lease) drops every profile held: the database may hand them
    /// on once their leases expire, and this instance must have stopped serving them by then.
    public var giveUpAfter: Duration { .milliseconds(Int64(leaseSeconds * 1000 * 0.8)) }
}
