import CastProtocol
import Foundation

/// A parsed device command (mqtt-api.md §5). Values are validated; ranges already checked.
public enum DeviceCommand: Sendable, Hashable {
    case load(LoadCommand)
    case play, pause, toggle, stop
    case seek(SeekCommand)
    case rate(Double)
    case volume(VolumeChange)
    case mute(MuteChange)
    case next, previous
    case launch(appId: String)
    case quit
    case send(SendCommand)
    case transfer(to: String, keepSource: Bool)
    case refresh
    case announce(AnnounceCommand)
    case skipAd
    /// Subtitles, audio language, active tracks, text style (EDIT_TRACKS_INFO).
    case tracks(TracksCommand)
    /// Edits of the receiver's queue (QUEUE_INSERT / REMOVE / REORDER / UPDATE).
    case queue(QueueCommand)
    /// Keep a page or an app on a display (Jobs/Keep.swift); never queued behind the device's work.
    case keep(KeepCommand)
}

extension DeviceCommand {
    /// Commands that change what plays: they end a running announcement without a restore (the
    /// user's newest intent wins).
    var changesWhatPlays: Bool {
        switch self {
        case .load, .stop, .launch, .quit, .transfer, .next, .previous: return true
        case .queue(let queue): return queue.jumps
        default: return false
        }
    }
}

public struct SeekCommand: Sendable, Hashable {
    public enum Target: Sendable, Hashable { case absolute(Double), relative(Double) }
    public var target: Target
    /// `PLAYBACK_START` / `PLAYBACK_PAUSE`, from `"resume": "play" | "pause"`.
    public var resumeState: String?
}

public enum VolumeChange: Sendable, Hashable {
    /// 0...1
    case level(Double)
    /// -100...100 percentage points, applied to the last reported level and clamped.
    case relativePercent(Double)
}

public enum MuteChange: Sendable, Hashable {
    case set(Bool)
    case toggle
}

public struct LoadCommand: Sendable, Hashable {
    public var appId: String
    /// Exactly one of `load` / `queue` is set.
    public var load: LoadRequest?
    public var queue: QueueLoadRequest?
}

public struct SendCommand: Sendable, Hashable {
    public var namespace: String
    public var payload: CastPayload
    public var appId: String?
    public var awaitReply: Bool
    /// Seconds; nil = `cast.request_timeout`.
    public var timeout: Double?
}

public struct AnnounceCommand: Sendable, Hashable {
    public var url: String
    public var volume: Double?
    public var contentType: String?
    public var title: String?
    /// Answer when the clip has finished instead of when it started.
    public var wait: Bool
}

/// A command with what the response needs to echo.
public struct ParsedCommand: Sendable, Hashable {
    public var name: String
    /// The `id` of the JSON form (string or number), echoed in the response.
    public var id: JSONValue?
    public var command: DeviceCommand
    /// `expires` of the JSON form: a command still waiting then is answered `timeout`.
    public var expires: Expiry?

    public init(name: String, id: JSONValue? = nil, command: DeviceCommand, expires: Expiry? = nil) {
        self.name = name
        self.id = id
        self.command = command
        self.expires = expires
    }
}

/// When a command stops being worth sending (`"expires"`: an RFC 3339 time, or seconds from
/// its arrival).
public enum Expiry: Sendable, Hashable {
    case at(Date)
    case after(seconds: Double)

    /// The deadline for a command that arrived at `now`.
    public func deadline(from now: Date) -> Date {
        switch self {
        case .at(let date): return date
        case .after(let seconds): return now.addingTimeInterval(seconds)
        }
    }

    /// `"2026-11-22T10:15:30Z"` (fractional seconds and offsets allowed) or a number of seconds
    /// (0 to a year); nil for anything else.
    static func parse(_ value: JSONValue) -> Expiry? {
        switch value {
        case .number(let seconds) where seconds.isFinite && seconds >= 0 && seconds <= 366 * 86_400:
            return .after(seconds: seconds)
        case .string(let text) where text.utf8.count <= 64:
            return RFC3339.parse(text).map(Expiry.at)
        default:
            return nil
        }
    }
}

/// Bridge-level requests (`<base>/bridge/request/<name>`).
public enum BridgeRequest: Sendable, Hashable {
    case devices
    case refresh
    case transfer(from: String, to: String, keepSource: Bool)
    case healthCheck
    /// Forget a device: clear its retained topics and discovery configs.
    case remove(device: String)
    /// Change log levels at run time (or, empty, read them).
    case logLevel(LogLevelRequest)
}
