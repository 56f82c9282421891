/// The indices a removal takes out (Chromium's `RemovingIndexes`): a sorted set with a fast
/// `contains` for the common single-index case, since the order controller asks it for every tab.
struct RemovingIndexes {
    private let sorted: [Int]

    init(_ indices: Set<Int>) { sorted = indices.sorted() }

    var count: Int { sorted.count }
    var first: Int? { sorted.first }
    var last: Int? { sorted.last }

    func contains(_ index: Int) -> Bool {
        switch sorted.count {
        case 0: return false
        case 1: return sorted[0] == index
        default:
            var low = 0
            var high = sorted.count - 1
            while low <= high {
                let mid = (low + high) / 2
                if sorted[mid] == index { return true }
                if sorted[mid] < index { low = mid + 1 } else { high = mid - 1 }
            }
            return false
        }
    }
}
