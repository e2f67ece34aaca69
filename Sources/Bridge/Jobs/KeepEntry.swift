import CastProtocol
import Foundation

/// Where a keep stands (`<dev>/keep`'s `state`, mqtt-api.md §13).
public enum KeepState: String, Sendable, Hashable, Codable, CaseIterable {
    case showing, launching, yielding
    case outsideWindow = "outside_window"
    case backoff, offline, off
}

/// A step a keep asked for; its completion comes back to `KeepJobs.stepDone`.
enum KeepStep: Sendable, Hashable {
    /// Silent launch: mute before the launch.
    case mute
    /// The launch (with DashCast's page or Lovelace's `connect` in the same operation).
    case launch
    /// DashCast's page or an app's messages for a session the keep did not configure yet.
    case configure
    /// Lovelace: `get_status` (the answer comes as an app message).
    case askStatus
    /// Lovelace: `show_lovelace_view`.
    case view
    /// Silent launch: the mute as it was.
    case restore
}

/// What a silent launch changed, to put back (kept in `state_dir`: a display is never left
/// muted, also across a restart or a lost connection).
struct SilentRestore: Sendable, Hashable, Codable {
    var muted: Bool
}

/// The keep of one device.
struct KeepEntry: Sendable {
    var spec: KeepSpec
    var enabled: Bool
    /// From the configuration file (`displays.<device>.keep`) rather than a command.
    var configured: Bool
    var state: KeepState = .off
    var since: Date
    /// Why it is in its state, a word (`app_showing`, `auth_error`, …), and the details.
    var reason: String?
    var detail: String?
    /// Launch attempts since the keep was set (a LAUNCH, or Lovelace's `connect`), across restarts.
    var launches = 0
    /// Keep operations in flight or queued.
    var pending = 0
    var failures = 0
    var backoffUntil: Date?
    /// The idle screen came back after another app (or after the page closed): launch then.
    var waitUntil: Date?
    /// Another app was showing (the next idle screen waits `yield_seconds`).
    var sawOther = false
    /// The next idle screen is the first since a (re)connect, a restart or a new keep: launch at once.
    var freshLink = true
    /// The app session the keep launched or found (kept across restarts).
    var session: String?
    /// The session the keep's page or messages were sent to (kept across restarts).
    var configuredSession: String?
    /// Lovelace: the session whose receiver reported being connected to our Home Assistant.
    var connectedSession: String?
    /// Lovelace: the session whose receiver reported a status at all (nil: ask it).
    var statusSession: String?
    /// Lovelace: the session `connect` went to, and until when its answer is awaited.
    var connectSession: String?
    var connectDeadline: Date?
    /// Lovelace: the session the view was sent to.
    var viewSession: String?
    /// Lovelace: the receiver is connected to another Home Assistant (someone else's page).
    var foreignSession: String?
    var shownAt: Date?
    /// DashCast: the session the keep launched, and when its page is sent even if the receiver
    /// has not said "Application ready" (a URL sent before that is lost).
    var launchedSession: String?
    var readyDeadline: Date?
    var restore: SilentRestore?
    var restoring = false

    init(spec: KeepSpec, enabled: Bool, configured: Bool, now: Date) {
        self.spec = spec
        self.enabled = enabled
        self.configured = configured
        self.since = now
    }

    /// What `state_dir/keeps.json` holds of it.
    var saved: KeepSnapshot.Entry {
        KeepSnapshot.Entry(spec: spec, enabled: enabled, configured: configured, launches: launches, session: session,
                           configuredSession: configuredSession, restore: restore)
    }

    /// `<dev>/keep`.
    var document: JSONValue {
        .object(["state": .string(state.rawValue), "app": .string(spec.summary), "app_id": .string(spec.appId), "since": .time(since),
                 "reason": .str(reason), "detail": .str(detail), "launches": .int(launches)])
    }
}


/// `state_dir/keeps.json` (mode 0600: it holds refresh tokens).
public struct KeepSnapshot: Sendable, Hashable, Codable {
    public struct Entry: Sendable, Hashable, Codable {
        var spec: KeepSpec
        var enabled: Bool
        var configured: Bool
        var launches: Int
        var session: String?
        var configuredSession: String?
        var restore: SilentRestore?
    }

    public var devices: [DeviceID: Entry]

    public init() { devices = [:] }
    init(devices: [DeviceID: Entry]) { self.devices = devices }
}
