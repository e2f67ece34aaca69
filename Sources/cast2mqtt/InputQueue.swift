import Bridge
import CastClient
import CastProtocol
import Discovery
import Synchronization

/// What the consumer task takes in: bridge inputs, and discovery events that the fleet turns
/// into bridge inputs after creating, moving or dropping the device's Cast client.
enum RuntimeInput: Sendable {
    case bridge(BridgeInput)
    case discovery(DiscoveryEvent)
    /// The broker connection dropped (the reconnect brings `.bridge(.mqttConnected)`).
    case mqttDisconnected
    /// A device's `eureka_info` answered (or could not be read): `DeviceFactsRunner`.
    case eureka(host: String, Result<EurekaInfo, EurekaFetchError>)
    /// Instance mode: a command from the web page, published to the broker (every instance
    /// hears it there; the device's owner answers).
    case webCommand(topic: String, payload: [UInt8])
}

/// The daemon's one input queue: many producers (the MQTT thread, discovery, the devices' event
/// loops, operation completions, the ticker, the web page), one consumer on an event loop (the
/// core's, which most devices share). Pushing never blocks a producer: the first input that finds
/// the consumer idle schedules it on its loop (`consume(on:)`); from a device on that same loop
/// that is no thread hop at all. What it holds is bounded by policy rather than by dropping
/// blindly:
///
/// - Inputs of one device keep their order, by construction. A device snapshot may replace an
///   older unprocessed snapshot of the same device, connection generation and link state once
///   more than `softLimit` inputs wait, and only when nothing else of that device (another
///   generation's snapshot, an operation's completion, an app message, a discovery event) was
///   queued between them: a snapshot is the whole device, so the newer one says all the older
///   one said, and a link that comes or goes is never coalesced away. Below
///   the limit every snapshot is kept, so no transition (and no event derived from it) is lost in
///   normal operation.
/// - At most one tick waits at a time.
/// - Past `hardLimit`, an MQTT message becomes `mqttOverloaded` (answered `busy` at once, never
///   run) and an app message is dropped (it is not state). Commands are never dropped silently.
/// - Everything else (completions, connects, discovery) is always kept: each is bounded by
///   something else (operations in flight, devices).
///
/// Both limits grow with the fleet (`accommodate(devices:)`): a start or a broker reconnect
/// queues a snapshot or two per device in normal operation, which must not read as an overload.
///
/// Drops and coalescings are counted (`health_check`) and logged once per burst.
final class InputQueue: Sendable {
    /// Waiting inputs per device the limits allow at least (`accommodate(devices:)`).
    static let softPerDevice = 2
    static let hardPerDevice = 8

    struct Counters: Sendable, Equatable {
        var coalescedStatuses = 0
        var droppedTicks = 0
        var overloadedCommands = 0
        var droppedAppMessages = 0
        /// True from the first drop of a burst until the queue drains below the soft limit.
        var inBurst = false
    }

    private struct State {
        /// Past this many waiting inputs snapshots may be coalesced; below it a burst of drops is over.
        var softLimit: Int
        /// Past this many MQTT messages are answered `busy` and app messages dropped.
        var hardLimit: Int
        /// Items from `head` on are waiting; slots before it are consumed (compacted now and then).
        var items: [RuntimeInput?] = []
        var head = 0
        /// Absolute sequence number of `items[0]`.
        var base = 0
        /// Per device: the absolute sequence number of its last queued input, and of its last
        /// queued snapshot with that snapshot's generation.
        var lastOf: [DeviceID: Int] = [:]
        var snapshotOf: [DeviceID: (seq: Int, generation: Int, link: DeviceSnapshot.Link)] = [:]
        var tickQueued = false
        /// Schedules the consumer on its loop; nil until `consume(on:)`.
        var schedule: (@Sendable () -> Void)?
        /// The consumer is scheduled or running: pushes need not schedule it again.
        var scheduled = false
        var finished = false
        var counters = Counters()
        var count: Int { items.count - head }
    }

    private let state: Mutex<State>
    /// Called (outside the lock) when a burst of drops begins, for one log line.
    private let onBurst: @Sendable (Int) -> Void

    init(softLimit: Int = 4096, hardLimit: Int = 16384, onBurst: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.state = Mutex(State(softLimit: softLimit, hardLimit: Swift.max(softLimit, hardLimit)))
        self.onBurst = onBurst
    }

    var counters: Counters { state.withLock { $0.counters } }
    var count: Int { state.withLock { $0.count } }
    var softLimit: Int { state.withLock { $0.softLimit } }
    var hardLimit: Int { state.withLock { $0.hardLimit } }

    /// Sizes the limits for a fleet of `devices` (from any thread): soft at least
    /// `softPerDevice`, hard at least `hardPerDevice` waiting inputs per device, never below the
    /// limits the queue was made with. They only grow: a device that leaves takes nothing back
    /// (what waits may have been queued under the larger limit).
    func accommodate(devices: Int) {
        let devices = Swift.min(Swift.max(0, devices), 1 << 32)
        state.withLock { s in
            s.softLimit = Swift.max(s.softLimit, devices * Self.softPerDevice)
            s.hardLimit = Swift.max(s.hardLimit, devices * Self.hardPerDevice, s.softLimit)
        }
    }

    /// Adds an input (from any thread); never blocks.
    func push(_ input: RuntimeInput) {
        var burstBegan: Int?
        let wake: (@Sendable () -> Void)? = state.withLock { s in
            guard !s.finished else { return nil }
            var item = input
            switch input {
            case .bridge(.tick):
                if s.tickQueued {
                    s.counters.droppedTicks += 1
                    return nil
                }
                s.tickQueued = true
            case .bridge(.mqttMessage(let topic, let payload, let responseTopic, let correlation)) where s.count >= s.hardLimit:
                item = .bridge(.mqttOverloaded(topic: topic, payload: payload, responseTopic: responseTopic,
                                               correlationData: correlation))
                s.counters.overloadedCommands += 1
                if !s.counters.inBurst {
                    s.counters.inBurst = true
                    burstBegan = s.count
                }
            case .bridge(.appMessage) where s.count >= s.hardLimit:
                s.counters.droppedAppMessages += 1
                if !s.counters.inBurst {
                    s.counters.inBurst = true
                    burstBegan = s.count
                }
                return nil
            default:
                if case .bridge(.device(let id, let snapshot)) = input, s.count >= s.softLimit,
                   let last = s.snapshotOf[id], last.seq == s.lastOf[id], last.generation == snapshot.generation,
                   last.link == snapshot.link, last.seq - s.base >= s.head {
                    s.items[last.seq - s.base] = input
                    s.counters.coalescedStatuses += 1
                    if !s.counters.inBurst {
                        s.counters.inBurst = true
                        burstBegan = s.count
                    }
                    return nil
                }
            }
            let seq = s.base + s.items.count
            if let id = Self.device(of: item) {
                s.lastOf[id] = seq
                if case .bridge(.device(_, let snapshot)) = item { s.snapshotOf[id] = (seq, snapshot.generation, snapshot.link) }
            }
            s.items.append(item)
            return Self.wakeConsumer(&s)
        }
        wake?()
        if let burstBegan { onBurst(burstBegan) }
    }

    /// The consumer's scheduling closure, when it is idle (and marks it scheduled).
    private static func wakeConsumer(_ s: inout State) -> (@Sendable () -> Void)? {
        guard !s.scheduled, let schedule = s.schedule else { return nil }
        s.scheduled = true
        return schedule
    }

    /// Ends the queue: the consumer gets what is queued, then `.finished`; later pushes are ignored.
    func finish() {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            s.finished = true
            return Self.wakeConsumer(&s)
        }
        wake?()
    }

    /// Runs the consumer on `loop`: `schedule` must hand `drain` to that loop (`loop.execute`).
    /// It is called (outside the lock) whenever an input arrives while the consumer is idle, so
    /// an input that finds it asleep wakes it once, and inputs that arrive while it runs are taken
    /// in the same turn.
    func consume(schedule: @escaping @Sendable () -> Void) {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            s.schedule = schedule
            return s.count > 0 || s.finished ? Self.wakeConsumer(&s) : nil
        }
        wake?()
    }

    enum Next: Sendable {
        case input(RuntimeInput)
        /// Nothing waits: the consumer is idle now (the next push schedules it again).
        case idle
        /// `finish()` was called and everything queued before was taken.
        case finished
    }

    /// The next input for the consumer (single consumer, on its loop). `stayAwake`: the consumer
    /// has work of its own left (a republish in parts) and will come back by itself, so an empty
    /// queue does not mark it idle (a push then does not schedule it a second time).
    func next(stayAwake: Bool = false) -> Next {
        state.withLock { s in
            if let input = Self.pop(&s) { return .input(input) }
            if s.finished { return .finished }
            if !stayAwake { s.scheduled = false }
            return .idle
        }
    }

    private static func pop(_ s: inout State) -> RuntimeInput? {
        guard s.head < s.items.count else { return nil }
        let input = s.items[s.head]
        s.items[s.head] = nil
        let seq = s.base + s.head
        s.head += 1
        if let input, let id = device(of: input) {
            if s.lastOf[id] == seq { s.lastOf[id] = nil }
            if s.snapshotOf[id]?.seq == seq { s.snapshotOf[id] = nil }
        }
        if case .bridge(.tick)? = input { s.tickQueued = false }
        if s.head >= 1024, s.head * 2 >= s.items.count {
            s.items.removeFirst(s.head)
            s.base += s.head
            s.head = 0
        }
        if s.counters.inBurst, s.count < s.softLimit { s.counters.inBurst = false }
        return input
    }

    /// The device an input belongs to (its order is kept with the device's other inputs).
    private static func device(of input: RuntimeInput) -> DeviceID? {
        switch input {
        case .bridge(.device(let id, _)), .bridge(.appMessage(let id, _, _)), .bridge(.operationCompleted(let id, _, _)):
            return id
        case .discovery(.added(let record)), .discovery(.updated(let record)): return record.id
        case .discovery(.removed(let id)): return id
        default: return nil
        }
    }

}
