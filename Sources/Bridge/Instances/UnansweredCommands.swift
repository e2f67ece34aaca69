import CastProtocol
import Foundation

/// The commands this instance saw for devices another live instance owns, until that owner's
/// response to each is seen (mqtt-api.md §10: a command that arrives while a device changes
/// hands is answered exactly once, never lost silently).
///
/// Why it works: the broker is one order, and everything an instance published precedes its will
/// in that order. So when its document is cleared (the will fired, or its clean stop ended), every
/// response it ever published on `<dev>/response` has been received: what is left here for it was
/// never answered. The rule's next owner of each such device answers those `busy` with a retry
/// hint (it cannot know whether the dead owner ran them: `busy` never runs a command twice); the
/// other instances compute the same next owner and drop theirs. A pure value: no clock, no I/O.
///
/// Matching: a response matches the oldest remembered command of the same device with the same
/// command name and the same `id` (absent on both counts as the same): for id-less commands this
/// is a count per name, and the busy answer of an id-less command names only the command, so which
/// one of equal ones stays does not matter. Commands with an MQTT 5 Response Topic are not
/// remembered: their owner answers on the client's topic, which the other instances do not see.
public struct UnansweredCommands: Sendable {
    public struct Command: Sendable, Hashable {
        public var owner: String
        /// The command name as in the response's `command` (`send` for `command/send/<ns>`).
        public var name: String
        public var id: JSONValue?
        public var until: Date
    }

    public static let perDevice = 64
    public static let total = 4096
    /// Beyond the time a dead owner's will takes (keepalive × 1.5 + will delay): a command the
    /// owner accepted before it died may have waited behind others and for the device's answer.
    public static let margin: TimeInterval = 30

    /// How long a command is kept: keepalive × 1.5 + will delay + `margin`.
    public let keep: TimeInterval
    private(set) var byDevice: [DeviceID: [Command]] = [:]
    public private(set) var count = 0
    /// Commands dropped to keep the bounds (the oldest first); they get no answer if their owner dies.
    public private(set) var dropped = 0

    public init(keepalive: Int, willDelay: Int) {
        keep = 1.5 * Double(max(0, keepalive)) + Double(max(0, willDelay)) + Self.margin
    }

    public func commands(_ id: DeviceID) -> [Command] { byDevice[id] ?? [] }

    /// A command for `device`, owned by the live instance `owner`, arrived at `now`.
    public mutating func remember(_ device: DeviceID, owner: String, name: String, id: JSONValue?, now: Date) {
        if let list = byDevice[device], list.count >= Self.perDevice {
            byDevice[device] = Array(list.dropFirst())
            count -= 1
            dropped += 1
        } else if count >= Self.total {
            dropOldest()
        }
        byDevice[device, default: []].append(Command(owner: owner, name: name, id: id, until: now.addingTimeInterval(keep)))
        count += 1
    }

    /// A response on `device`'s response topic: forgets the command it answers. False when none matched.
    @discardableResult
    public mutating func answered(_ device: DeviceID, name: String, id: JSONValue?) -> Bool {
        guard var list = byDevice[device], let i = list.firstIndex(where: { $0.name == name && $0.id == id }) else { return false }
        list.remove(at: i)
        byDevice[device] = list.isEmpty ? nil : list
        count -= 1
        return true
    }

    /// `owner`'s document was cleared: its unanswered commands, per device, in arrival order
    /// (removed from here).
    public mutating func ownerGone(_ owner: String) -> [(DeviceID, [Command])] {
        var out: [(DeviceID, [Command])] = []
        for device in byDevice.keys.sorted() {
            guard let list = byDevice[device], list.contains(where: { $0.owner == owner }) else { continue }
            out.append((device, list.filter { $0.owner == owner }))
            let rest = list.filter { $0.owner != owner }
            byDevice[device] = rest.isEmpty ? nil : rest
            count -= list.count - rest.count
        }
        return out
    }

    /// Forgets what is past its time. Returns how many.
    @discardableResult
    public mutating func expire(now: Date) -> Int {
        guard count > 0 else { return 0 }
        var gone = 0
        for (device, list) in byDevice where list.contains(where: { $0.until <= now }) {
            let rest = list.filter { $0.until > now }
            byDevice[device] = rest.isEmpty ? nil : rest
            gone += list.count - rest.count
        }
        count -= gone
        return gone
    }

    /// After this instance's own reconnect or freeze: responses may have been missed, so nothing
    /// remembered can be trusted to be unanswered.
    public mutating func forgetAll() {
        byDevice = [:]
        count = 0
    }

    private mutating func dropOldest() {
        guard let (device, list) = byDevice.min(by: { ($0.value.first?.until ?? .distantFuture) < ($1.value.first?.until ?? .distantFuture) }),
              !list.isEmpty else { return }
        let rest = Array(list.dropFirst())
        byDevice[device] = rest.isEmpty ? nil : rest
        count -= 1
        dropped += 1
    }
}
