import Foundation

/// Commands that arrive while the bridge is starting, for a device that has not been online yet.
///
/// The bridge keeps a persistent MQTT session, so commands published while it was down are
/// delivered the moment it reconnects — before discovery has found the devices and before
/// their Cast connections are up. Such a command is held (at most `seconds` after start, at most
/// `maxHeld` of them) and run as soon as its device comes online; whatever is still held when
/// the window closes is run then, and answered as usual (`unknown_device`, `device_offline`).
struct StartupHold: Sendable {
    struct Held: Sendable {
        var device: String
        var topic: String
        var payload: [UInt8]
        var responseTopic: String?
        var correlationData: [UInt8]?
    }

    static let seconds: TimeInterval = 10
    static let maxHeld = 256

    let startedAt: Date
    private var held: [Held] = []

    init(startedAt: Date) {
        self.startedAt = startedAt
    }

    /// Commands held now.
    var count: Int { held.count }

    func isOpen(now: Date) -> Bool { now.timeIntervalSince(startedAt) < Self.seconds }

    /// True when the command was held for later. `everOnline`: the device (by topic name) has
    /// been online in this run — then it is known to be offline, and its commands fail at once.
    /// (An oversized payload is never offered: it is answered at once.)
    mutating func hold(_ command: Held, everOnline: Bool, now: Date) -> Bool {
        guard isOpen(now: now), held.count < Self.maxHeld, !everOnline else { return false }
        held.append(command)
        return true
    }

    /// The held commands of `device` (it just came online), or all of them once the window has
    /// closed, removed from the hold.
    mutating func release(device: String?, now: Date) -> [Held] {
        guard !held.isEmpty else { return [] }
        let windowClosed = !isOpen(now: now)
        let release = held.filter { windowClosed || $0.device == device }
        held.removeAll { windowClosed || $0.device == device }
        return release
    }
}
