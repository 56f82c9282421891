/// Told when a profile's web state is replaced (the profile mediator: it is written and announced).
public protocol BrowserStateObserver: AnyObject {
    func browserStateDidReplaceStorageState(_ state: BrowserState)
}

// A profile's web state (issue 52): its cookies and localStorage, one value replaced whole.
extension BrowserState {
    /// Replaces the profile's web state.
    ///
    /// Preconditions, checked first (nothing changes when one fails): `state` keeps Chromium's limits
    /// (``StorageState/check(_:)``: ``ModelError/invalidStorageState(member:reason:)``), and the growth
    /// it brings fits the profile's byte budget (``ModelError/profileFull(used:adding:limit:)``).
    /// Notifies: ``BrowserStateObserver/browserStateDidReplaceStorageState(_:)``, unless it is unchanged.
    public func replaceStorageState(_ state: StorageState, limits: StorageState.Limits = StorageState.Limits()) throws {
        try state.check(limits)
        let bytes = state.byteCount
        try budget.check(adding: bytes - storageStateBytes)
        guard state != storageState else { return }
        budget.charge(bytes - storageStateBytes)
        storageStateBytes = bytes
        storageState = state
        for box in stateObservers { box.observer?.browserStateDidReplaceStorageState(self) }
    }

    /// Sets the state read from storage (a restore): charged, not checked (what is stored was checked
    /// when it was written), and no one is told.
    public func restoreStorageState(_ state: StorageState) {
        let bytes = state.byteCount
        budget.charge(bytes - storageStateBytes)
        storageStateBytes = bytes
        storageState = state
    }

    /// Gives the state's bytes back to the budget (the profile, or its off-the-record profile, goes).
    func releaseStorageState() {
        budget.charge(-storageStateBytes)
        storageStateBytes = 0
        storageState = .empty
    }

    public func addObserver(_ observer: any BrowserStateObserver) {
        stateObservers.removeAll { $0.observer == nil || $0.observer === observer }
        stateObservers.append(WeakBrowserStateObserver(observer: observer))
    }
}

struct WeakBrowserStateObserver {
    weak var observer: (any BrowserStateObserver)?
}
