import CEmbeddedFiles

/// The files compiled into the binary (CEmbeddedFiles): the contract and the inspector page's files,
/// copied into an array on each use (the routes keep theirs).
enum EmbeddedFiles {
    static var openapiYAML: [UInt8] { bytes(CEmbeddedFiles_openapi_yaml()) }
    static var inspectorPage: [UInt8] { bytes(CEmbeddedFiles_inspector_index_html()) }
    static var inspectorScript: [UInt8] { bytes(CEmbeddedFiles_inspector_js()) }
    static var inspectorStyle: [UInt8] { bytes(CEmbeddedFiles_inspector_css()) }
    static var favicon: [UInt8] { bytes(CEmbeddedFiles_inspector_favicon_svg()) }

    private static func bytes(_ file: CEmbeddedFiles_file) -> [UInt8] {
        Array(UnsafeBufferPointer(start: file.bytes, count: file.count))
    }
}
