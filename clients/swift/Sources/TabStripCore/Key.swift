/// A key the tab strip acts on, read from the terminal's bytes.
public enum Key: Sendable, Equatable {
    case up, down, activate, new, close, moveLeft, moveRight, togglePin, quit

    /// The keys in `bytes` (raw-mode input: letters, Enter, arrow escape sequences); other bytes are skipped.
    public static func parse(_ bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x1B, index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "[") {
                switch bytes[index + 2] {
                case UInt8(ascii: "A"), UInt8(ascii: "D"): keys.append(.up)
                case UInt8(ascii: "B"), UInt8(ascii: "C"): keys.append(.down)
                default: break
                }
                index += 3
                continue
            }
            switch byte {
            case UInt8(ascii: "k"): keys.append(.up)
            case UInt8(ascii: "j"): keys.append(.down)
            case 0x0D, 0x0A, UInt8(ascii: " "): keys.append(.activate)
            case UInt8(ascii: "n"): keys.append(.new)
            case UInt8(ascii: "x"): keys.append(.close)
            case UInt8(ascii: "["): keys.append(.moveLeft)
            case UInt8(ascii: "]"): keys.append(.moveRight)
            case UInt8(ascii: "p"): keys.append(.togglePin)
            case UInt8(ascii: "q"), 0x03, 0x04: keys.append(.quit)
            default: break
            }
            index += 1
        }
        return keys
    }
}
