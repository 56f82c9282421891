public import BrowserRecords
import Synchronization

/// This instance among those sharing one database, and the leases it holds now (profile → epoch):
/// what every commit's fence check claims.
public final class HeldLeases: Sendable {
    /// This process's id among the instances (new at every start).
    public let instanceID: InstanceID
    /// Where other instances forward this one's profiles' requests (set once the server is bound).
    public var advertiseURL: String {
        get { url.withLock { $0 } }
        set { url.withLock { $0 = newValue } }
    }
    private let url: Mutex<String>
    /// How long a lease lasts without renewal.
    public let ttlSeconds: Double
    private let held = Mutex<[String: LeaseEpoch]>([:])

    public init(instanceID: InstanceID = .random(), advertiseURL: String, ttlSeconds: Double) {
        self.instanceID = instanceID
        self.url = Mutex(advertiseURL)
        self.ttlSeconds = ttlSeconds
    }

    public func epoch(of profile: String) -> LeaseEpoch? { held.withLock { $0[profile] } }
    public var all: [String: LeaseEpoch] { held.withLock { $0 } }
    public var count: Int { held.withLock { $0.count } }
    func set(_ profile: String, epoch: LeaseEpoch) { held.withLock { $0[profile] = epoch } }
    @discardableResult
    func remove(_ profile: String) -> Bool { held.withLock { $0.removeValue(forKey: profile) != nil } }
}
