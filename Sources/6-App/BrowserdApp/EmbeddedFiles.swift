import CEmbeddedFiles

/// The files compiled into the binary (CEmbeddedFiles): the contract and the inspector page's files,
/// each copied into an array once, when first used.
enum EmbeddedFiles {
    static let openapiYAML = bytes(CEmbeddedFiles_openapi_yaml())
    static let inspectorPage = bytes(CEmbeddedFiles_inspector_index_html())
    static let inspectorScript = bytes(CEmbeddedFiles_inspector_js())
    static let inspectorStyle = bytes(CEmbeddedFiles_inspector_css())
    static let favicon = bytes(CEmbeddedFiles_inspector_favicon_svg())

    private static func bytes(_ file: CEmbeddedFiles_file) -> [UInt8] {
        Array(UnsafeBufferPointer(start: file.bytes, count: file.count))
    }
}
