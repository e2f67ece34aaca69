import Bridge
import Discovery
import NIOConcurrencyHelpers

/// What the consumer task takes in: bridge inputs, and discovery events that the fleet turns
/// into bridge inputs after creating, moving or dropping the device's Cast client.
enum RuntimeInput: Sendable {
    case bridge(BridgeInput)
    case discovery(DiscoveryEvent)
    /// The broker connection dropped (the reconnect brings `.bridge(.mqttConnected)`).
    case mqttDisconnected
}

/// The daemon's one input queue: many producers (the MQTT thread, discovery, the devices' event
/// loops, operation tasks, the ticker), one consumer. Pushing never blocks a producer, and what
/// it holds is bounded by policy rather than by dropping blindly:
///
/// - A status (receiver or media) of a device may replace an older unprocessed status of the
///   same kind and device once more than `softLimit` inputs wait: statuses are idempotent, the
///   newest one is the truth. Below the limit every status is kept, so no transition (and no
///   event derived from it) is lost in normal operation.
/// - At most one tick waits at a time.
/// - Past `hardLimit`, an MQTT message becomes `mqttOverloaded` (answered `busy` at once, never
///   run) and an app message is dropped (it is not state). Commands are never dropped silently.
/// - Everything else (completions, connects, discovery) is always kept: each is bounded by
///   something else (operations in flight, devices).
///
/// Drops and coalescings are counted (`health_check`) and logged once per burst.
final class InputQueue: AsyncSequence, Sendable {
    typealias Element = RuntimeInput

    struct Counters: Sendable, Equatable {
        var coalescedStatuses = 0
        var droppedTicks = 0
        var overloadedCommands = 0
        var droppedAppMessages = 0
        /// True from the first drop of a burst until the queue drains below the soft limit.
        var inBurst = false
    }

    private enum StatusKey: Hashable {
        case receiver(DeviceID)
        case media(DeviceID)
    }

    private struct State {
        /// Below this many waiting inputs a burst of drops is over.
        let softLimit: Int
        /// Items from `head` on are waiting; slots before it are consumed (compacted now and then).
        var items: [RuntimeInput?] = []
        var head = 0
        /// Absolute sequence number of `items[0]`.
        var base = 0
        /// The queued status of each device and kind, by absolute sequence number.
        var statusAt: [StatusKey: Int] = [:]
        var tickQueued = false
        var waiter: CheckedContinuation<RuntimeInput?, Never>?
        var finished = false
        var counters = Counters()
        var count: Int { items.count - head }
    }

    let softLimit: Int
    let hardLimit: Int
    private let state: NIOLockedValueBox<State>
    /// Called (outside the lock) when a burst of drops begins, for one log line.
    private let onBurst: @Sendable (Int) -> Void

    init(softLimit: Int = 4096, hardLimit: Int = 16384, onBurst: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.softLimit = softLimit
        self.hardLimit = Swift.max(softLimit, hardLimit)
        self.state = NIOLockedValueBox(State(softLimit: softLimit))
        self.onBurst = onBurst
    }

    var counters: Counters { state.withLockedValue { $0.counters } }
    var count: Int { state.withLockedValue { $0.count } }

    /// Adds an input (from any thread); never blocks.
    func push(_ input: RuntimeInput) {
        var burstBegan: Int?
        let waiter: CheckedContinuation<RuntimeInput?, Never>? = state.withLockedValue { s in
            guard !s.finished else { return nil }
            if let waiter = s.waiter {
                s.waiter = nil
                if case .bridge(.tick) = input { s.tickQueued = false }
                return waiter
            }
            var item = input
            let key = Self.statusKey(input)
            switch input {
            case .bridge(.tick):
                if s.tickQueued {
                    s.counters.droppedTicks += 1
                    return nil
                }
                s.tickQueued = true
            case .bridge(.mqttMessage(let topic, let payload, let responseTopic, let correlation)) where s.count >= hardLimit:
                item = .bridge(.mqttOverloaded(topic: topic, payload: payload, responseTopic: responseTopic,
                                               correlationData: correlation))
                s.counters.overloadedCommands += 1
                if !s.counters.inBurst {
                    s.counters.inBurst = true
                    burstBegan = s.count
                }
            case .bridge(.appMessage) where s.count >= hardLimit:
                s.counters.droppedAppMessages += 1
                if !s.counters.inBurst {
                    s.counters.inBurst = true
                    burstBegan = s.count
                }
                return nil
            default:
                if let key, s.count >= softLimit, let at = s.statusAt[key], at - s.base >= s.head {
                    s.items[at - s.base] = input
                    s.counters.coalescedStatuses += 1
                    if !s.counters.inBurst {
                    s.counters.inBurst = true
                    burstBegan = s.count
                }
                    return nil
                }
            }
            if let key { s.statusAt[key] = s.base + s.items.count }
            s.items.append(item)
            return nil
        }
        if let waiter { waiter.resume(returning: input) }
        if let burstBegan { onBurst(burstBegan) }
    }

    /// Ends the queue: the consumer gets what is queued, then nil; later pushes are ignored.
    func finish() {
        let waiter: CheckedContinuation<RuntimeInput?, Never>? = state.withLockedValue { s in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next input (single consumer).
    func next() async -> RuntimeInput? {
        if let ready = state.withLockedValue({ Self.pop(&$0) }) { return ready }
        return await withCheckedContinuation { continuation in
            let immediate: RuntimeInput?? = state.withLockedValue { s in
                if let ready = Self.pop(&s) { return .some(ready) }
                if s.finished { return .some(nil) }
                s.waiter = continuation
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    private static func pop(_ s: inout State) -> RuntimeInput? {
        guard s.head < s.items.count else { return nil }
        let input = s.items[s.head]
        s.items[s.head] = nil
        let seq = s.base + s.head
        s.head += 1
        if let input, let key = statusKey(input), s.statusAt[key] == seq { s.statusAt[key] = nil }
        if case .bridge(.tick)? = input { s.tickQueued = false }
        if s.head >= 1024, s.head * 2 >= s.items.count {
            s.items.removeFirst(s.head)
            s.base += s.head
            s.head = 0
        }
        if s.counters.inBurst, s.count < s.softLimit { s.counters.inBurst = false }
        return input
    }

    private static func statusKey(_ input: RuntimeInput) -> StatusKey? {
        switch input {
        case .bridge(.receiverStatus(let id, _)): return .receiver(id)
        case .bridge(.mediaStatus(let id, _)): return .media(id)
        default: return nil
        }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let queue: InputQueue
        mutating func next() async -> RuntimeInput? { await queue.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: self) }
}
