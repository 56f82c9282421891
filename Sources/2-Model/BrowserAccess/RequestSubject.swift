/// What a request names, by its route's parameters, query or body: the profile, window, tab or group
/// whose regular profile must be in memory to serve it (read from a request by `RequestSubject+HTTP`, in
/// the API). The placement stages ask it (the cluster's,
/// to find the instance that holds the profile; the embedded store's, to load the profile on first use).
public enum RequestSubject: Sendable, Hashable {
    case profile(String)
    case window(String)
    case tab(String)
    case group(String)
}
