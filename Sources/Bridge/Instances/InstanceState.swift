import Foundation

/// What the core keeps in instance mode (nil in single mode): the ownership view, the commands
/// held for devices this instance is taking over, and whether it was the primary.
struct InstanceState: Sendable {
    var ownership: Ownership
    var held = HeldCommands()
    /// Commands for devices of other live instances, until their owner answers them.
    var unanswered: UnansweredCommands
    /// `unanswered.dropped` when it was last logged.
    var droppedLogged = 0
    var primary = false
    /// When this instance took each device it owns and has not seen online yet.
    var gainedAt: [DeviceID: Date] = [:]
    /// `instance` resolved device preferences: configuration key (id, name or topic) → names.
    let prefer: [String: [String]]

}

/// The instance document's will.
public enum InstanceWill {
    /// Its MQTT 5 Will Delay Interval in seconds (`mqtt.will_delay`), named in the document; the
    /// one place it is read.
    public static func delay(_ configuration: BridgeConfiguration) -> Int { max(0, configuration.mqtt.willDelay) }
}

/// Commands held by the instance the rule names while a device changes hands (mqtt-api.md §10):
/// run once it owns the device and the device is online, or answered `busy` with `retry_after`
/// after `bound` seconds. Bounded per device and in all; what does not fit is answered at once.
struct HeldCommands: Sendable {
    struct Held: Sendable {
        var topic: String
        var payload: [UInt8]
        var responseTopic: String?
        var correlationData: [UInt8]?
        var until: Date
        /// Held while this instance owned the device and was live in everyone's view: the other
        /// instances keep it too (UnansweredCommands), and if this instance's will fires they
        /// answer it, so it must not.
        var keptByOthers = false
    }

    /// How long a command waits for its device to come online with its new owner: a clean
    /// handover takes a few seconds; past this the caller is told to retry.
    static let bound: TimeInterval = 10
    /// The retry hint of the `busy` answers.
    static let retryAfter: Double = 5
    static let perDevice = 64
    static let total = 4096

    private(set) var byDevice: [DeviceID: [Held]] = [:]
    private(set) var count = 0

    /// False when the bounds are reached (answer `busy` at once).
    mutating func hold(_ id: DeviceID, _ held: Held) -> Bool {
        guard count < Self.total, byDevice[id, default: []].count < Self.perDevice else { return false }
        byDevice[id, default: []].append(held)
        count += 1
        return true
    }

    mutating func take(_ id: DeviceID) -> [Held] {
        let list = byDevice.removeValue(forKey: id) ?? []
        count -= list.count
        return list
    }

    /// This instance's will fired: forgets the commands the others answer. Returns how many.
    mutating func dropKeptByOthers() -> Int {
        guard count > 0 else { return 0 }
        var gone = 0
        for (id, list) in byDevice where list.contains(where: \.keptByOthers) {
            let rest = list.filter { !$0.keptByOthers }
            byDevice[id] = rest.isEmpty ? nil : rest
            gone += list.count - rest.count
        }
        count -= gone
        return gone
    }

    /// The held commands past their bound, in arrival order per device.
    mutating func expired(now: Date) -> [Held] {
        guard count > 0 else { return [] }
        var out: [Held] = []
        for id in byDevice.keys.sorted() {
            guard let list = byDevice[id], list.contains(where: { $0.until <= now }) else { continue }
            out += list.filter { $0.until <= now }
            let rest = list.filter { $0.until > now }
            byDevice[id] = rest.isEmpty ? nil : rest
            count -= list.count - rest.count
        }
        return out
    }
}
