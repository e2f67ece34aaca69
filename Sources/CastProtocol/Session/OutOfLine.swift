/// An optional value kept in an immutable heap box instead of inline: the holder carries one
/// pointer (nil: no box at all), and copies of the holder share the box.
///
/// For the large, mostly absent parts of a `DeviceSnapshot` (a `MediaStatus` is ~1.5 KiB
/// inline): every device keeps its snapshot several times over — the session machine's current
/// and last published one, the bridge's record, the inputs on their way — and a dictionary of
/// records reserves room for a whole record in each of its empty buckets too. Setting the value
/// makes a new box; the old one is freed when nothing holds it (docs/performance.md, "Second
/// round: the bridge's own state").
@propertyWrapper
public struct OutOfLine<Value: Sendable & Hashable>: Sendable, Hashable {
    private indirect enum Box: Sendable, Hashable {
        case value(Value)
    }

    private var box: Box?

    public init(wrappedValue: Value?) {
        box = wrappedValue.map(Box.value)
    }

    public var wrappedValue: Value? {
        get {
            guard case .value(let value) = box else { return nil }
            return value
        }
        set { box = newValue.map(Box.value) }
    }
}
