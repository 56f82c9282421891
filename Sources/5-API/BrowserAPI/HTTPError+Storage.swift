public import HTTPServer

extension HTTPError {
    /// 503 `/problems/storage-unavailable` with `Retry-After`: storage could not be written or read
    /// for the request, and nothing was changed (the one shape of every storage failure's answer).
    public static func storageUnavailable(_ detail: String, retryAfter: Int) -> HTTPError {
        HTTPError(503, kind: "storage-unavailable", title: "Storage Unavailable", detail: detail, headers: ["Retry-After": String(retryAfter)])
    }
}
