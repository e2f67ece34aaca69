import Foundation

/// Commands that arrive while the bridge is starting, for a device that has not been online yet.
///
/// The bridge keeps a persistent MQTT session, so commands published while it was down are
/// delivered the moment it reconnects — before discovery has found the devices and before
/// their Cast connections are up. Such a command is held and run as soon as its device comes
/// online; whatever is still held when the window closes is run then, and answered as usual
/// (`unknown_device`, `device_offline`).
///
/// The window is open for at least `minimumSeconds` after start, then for as long as a device
/// the bridge knows is still on its first connect (the core says which: `close(now:connecting:)`),
/// and never longer than `maximumSeconds`. Once closed it stays closed: a device discovered
/// later does not open it again. At most `maxHeld(devices:)` commands are held: the number of
/// devices, at least `minimumHeld`, at most `maximumHeld`; and at most `maxHeldBytes` of
/// payload in all (a command that does not fit runs at once, answered as usual).
struct StartupHold: Sendable {
    struct Held: Sendable {
        var device: String
        var topic: String
        var payload: [UInt8]
        var responseTopic: String?
        var correlationData: [UInt8]?
    }

    /// The window is open this long whatever the devices do (discovery needs time to find them).
    static let minimumSeconds: TimeInterval = 10
    /// ... and never longer than this, even while devices are still connecting (a connect that
    /// neither succeeds nor fails: a TCP connect or TLS handshake hanging until its timeout).
    static let maximumSeconds: TimeInterval = 120
    static let minimumHeld = 256
    /// The most devices one daemon serves (one file descriptor each, under its 20 000 limit).
    static let maximumHeld = 20_000
    /// Each held command keeps its payload (up to `mqtt.max_payload`): this many bytes in all.
    static let maxHeldBytes = 64 << 20
    /// How often, at most, the core is asked whether devices are still connecting.
    static let checkInterval: TimeInterval = 1

    /// Commands held at most with `devices` devices known.
    static func maxHeld(devices: Int) -> Int { min(max(minimumHeld, devices), maximumHeld) }

    /// Why the window closed.
    enum Closing: Sendable, Equatable {
        /// Every device's first connect ended (online, or offline with a reason).
        case devicesSettled(after: TimeInterval)
        /// `maximumSeconds` passed with devices still connecting.
        case limitReached
    }

    let startedAt: Date
    private var held: [Held] = []
    private var heldBytes = 0
    /// Held commands per device topic: a device that comes online with none held (nearly all of
    /// them) costs no walk of the hold.
    private var heldPerDevice: [String: Int] = [:]
    /// Set when the window closed; it never opens again.
    private(set) var closing: Closing?
    private var checkedAt: Date?

    init(startedAt: Date) {
        self.startedAt = startedAt
    }

    /// Commands held now.
    var count: Int { held.count }

    func isOpen(now: Date) -> Bool { closing == nil && now.timeIntervalSince(startedAt) < Self.maximumSeconds }

    /// Closes the window when it may: past `maximumSeconds`, or past `minimumSeconds` once
    /// `connecting()` (is a device the bridge knows still on its first connect?) says no. That
    /// question is asked at most once per `checkInterval`. Returns how it closed, once.
    mutating func close(now: Date, connecting: () -> Bool) -> Closing? {
        guard closing == nil else { return nil }
        let elapsed = now.timeIntervalSince(startedAt)
        if elapsed >= Self.maximumSeconds {
            closing = .limitReached
            return closing
        }
        guard elapsed >= Self.minimumSeconds else { return nil }
        if let checkedAt, now.timeIntervalSince(checkedAt) < Self.checkInterval { return nil }
        checkedAt = now
        guard !connecting() else { return nil }
        closing = .devicesSettled(after: elapsed)
        return closing
    }

    /// True when the command was held for later. `everOnline`: the device (by topic name) has
    /// been online in this run — then it is known to be offline, and its commands fail at once.
    /// `devices`: how many devices the bridge knows (sizes the bound).
    /// (An oversized payload is never offered: it is answered at once.)
    mutating func hold(_ command: Held, everOnline: Bool, devices: Int, now: Date) -> Bool {
        guard isOpen(now: now), held.count < Self.maxHeld(devices: devices), !everOnline,
              heldBytes + command.payload.count <= Self.maxHeldBytes else { return false }
        held.append(command)
        heldBytes += command.payload.count
        heldPerDevice[command.device, default: 0] += 1
        return true
    }

    /// The held commands of `device` (it just came online), or all of them once the window has
    /// closed, removed from the hold.
    mutating func release(device: String?, now: Date) -> [Held] {
        guard !held.isEmpty else { return [] }
        let windowClosed = !isOpen(now: now)
        // Asked before every command while the window is open: nothing to walk then.
        guard windowClosed || device.map({ heldPerDevice[$0] != nil }) == true else { return [] }
        let release = held.filter { windowClosed || $0.device == device }
        held.removeAll { windowClosed || $0.device == device }
        for command in release {
            heldBytes -= command.payload.count
            heldPerDevice[command.device, default: 1] -= 1
            if heldPerDevice[command.device] == 0 { heldPerDevice[command.device] = nil }
        }
        return release
    }
}
