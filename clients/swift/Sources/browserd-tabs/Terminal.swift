import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The terminal the strip draws on: raw input (keys arrive one by one, unechoed), the alternate
/// screen while it runs, everything restored by ``restore()``.
final class Terminal: @unchecked Sendable {
    // `@unchecked Sendable`: `saved` is written once in `init` and read in `restore`; the rest is
    // immutable. Output goes through one `write` per frame.
    private var saved = termios()
    private let isTTY: Bool

    init() {
        isTTY = isatty(STDIN_FILENO) == 1
        if isTTY {
            tcgetattr(STDIN_FILENO, &saved)
            var raw = saved
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
            raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
            withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
            tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        }
        write("\u{1B}[?1049h\u{1B}[?25l")
    }

    func restore() {
        write("\u{1B}[?25h\u{1B}[?1049l")
        if isTTY { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }
    }

    /// The terminal's width in columns (80 when it cannot tell).
    var width: Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Clears the screen and draws `lines` from the top.
    func draw(_ lines: [String]) {
        write("\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\r\n"))
    }

    /// The bytes typed, as they come (a thread blocks in `read`); ends at end of input.
    func input() -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            let thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 64)
                while true {
                    let count = read(STDIN_FILENO, &buffer, buffer.count)
                    guard count > 0 else { break }
                    continuation.yield(Array(buffer[0..<count]))
                }
                continuation.finish()
            }
            thread.start()
        }
    }

    private func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            guard written > 0 else { return }
            offset += written
        }
    }
}
