/// The renderer's timing and picture settings as one value: the I/O code (``Renderer``, its pages)
/// asks it instead of holding constants of its own, and tests read and change it.
public struct RendererPolicy: Sendable, Equatable {
    /// Chromium's restarts: the first wait, the most a wait doubles to, and how long Chromium must have
    /// run for the wait to start over from the first (``RestartBackoff``).
    public var restartFirstDelay: Duration = .milliseconds(250)
    public var restartMaximumDelay: Duration = .seconds(10)
    public var restartResetAfter: Duration = .seconds(30)
    /// How long a starting Chromium may take to answer its first command.
    public var startTimeout: Duration = .seconds(30)
    /// A DevTools command's deadline; a quick one's (close, activate or crash a target, read the layout);
    /// a picture's.
    public var commandTimeout: Duration = .seconds(10)
    public var quickCommandTimeout: Duration = .seconds(2)
    /// How often the profile's web state (cookies, the live pages' localStorage) is read and, when it
    /// changed, saved at browserd: what a crash can lose (issue 52; Chrome's own cookie store commits
    /// every 30 s).
    public var webStateEvery: Duration = .seconds(1)
    public var snapshotTimeout: Duration = .seconds(5)
    /// Chromium's navigation list, asked at a commit, may not hold the committed URL yet (a popup's
    /// first entry, about one popup in ten): asked again at most this many times, this far apart.
    public var historyAttempts = 20
    public var historyRetryInterval: Duration = .milliseconds(10)
    /// How long a commit of the page's own waits for its step (the Navigation API's type, from the
    /// renderer's world) before the page's list is read instead (a page whose scripts a client
    /// disabled never tells it).
    public var stepWait: Duration = .milliseconds(250)
    /// How long a page's state reports (title, favicon, loading, progress) are held to go as one
    /// request with their latest values (``PageStateBatch``; zero sends each at once): a frame at 60 Hz.
    public var pageStateDelay: Duration = .milliseconds(16)
    /// The pages' lease at browserd (issue 56): put again this often while nothing changes (browserd
    /// keeps it 15 s); looked at at least this often when no change wakes the loop (it looked every
    /// 50 ms once: 20 wake-ups a second per profile, idle or not); tried again this soon after a put
    /// that failed.
    public var leaseRenewal: Duration = .seconds(5)
    public var leaseLook: Duration = .seconds(1)
    public var leaseRetry: Duration = .milliseconds(250)
    /// Whether a page's own commits are reported from their steps (false: every commit from the list
    /// read after it, as before; the bench's baseline).
    public var followsSteps = true
    /// A target Chromium keeps after `Target.closeTarget` (a page mid-load): closed again at most this
    /// many times, this far apart.
    public var closeAttempts = 10
    public var closeRetryInterval: Duration = .milliseconds(100)
    /// How long the renderer waits for Chromium's session of a page it made, and for a popup's tab.
    public var attachTimeout: Duration = .seconds(10)
    /// A picture's scale (0.316² ≈ a tenth of the page's pixels: 253×190 of an 800×600 page) and its
    /// JPEG quality.
    public var snapshotScale = 0.316
    public var snapshotQuality = 60

    public init() {}

    /// What browserd-renderer runs with.
    public static let standard = RendererPolicy()
}

/// The waits between Chromium's starts: from the policy's first, doubling up to its maximum; a
/// Chromium that ran long enough before it ended starts the waits over (a value: the supervisor
/// asks it and sleeps).
public struct RestartBackoff: Sendable, Equatable {
    public let policy: RendererPolicy
    /// The wait before the next start, if the next one fails too.
    public private(set) var next: Duration

    public init(policy: RendererPolicy) {
        self.policy = policy
        next = policy.restartFirstDelay
    }

    /// Chromium did not start (`ran` nil), or ended after running for `ran`: how long to wait before
    /// starting it again.
    public mutating func failed(afterRunning ran: Duration? = nil) -> Duration {
        if let ran, ran > policy.restartResetAfter { next = policy.restartFirstDelay }
        let wait = next
        next = min(next * 2, policy.restartMaximumDelay)
        return wait
    }
}
