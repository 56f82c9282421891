import ImportFuzzing

/// `make fuzz` builds this with coverage instrumentation and `-DFUZZING` and links libFuzzer's driver:
/// its arguments are libFuzzer's. Built plainly, it replays files: `FuzzFirefoxSession FILE…`.
@main struct FuzzFirefoxSession {
    static func main() throws { try ImportFuzzing.run(ImportFuzzing.firefox) }
}
