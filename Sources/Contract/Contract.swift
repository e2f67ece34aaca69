/// The names of the MQTT contract (`mqtt-api.md`), in one place: the device commands, the bridge
/// requests, the error codes and the topic leaves. Everything that names one of them — the
/// parser, the topic grammar, Home Assistant discovery, the metrics labels — takes it from here,
/// so a command added to the contract is added once (ContractTests walks every name through
/// each of those and through docs/topics.md). No dependencies: the web module and the bridge
/// both read it.

/// The device commands (`<base>/<dev>/command/<name>`, mqtt-api.md §5).
public enum CommandName: String, Sendable, Hashable, CaseIterable {
    case load, play, pause, toggle, stop, seek, rate, volume, mute, next, previous, launch, quit, send, transfer,
         refresh, announce
    case skipAd = "skip_ad"
    case tracks, queue, keep

    /// One hash look-up instead of comparing the name with each case's in turn.
    public static let byName = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })
}

/// The bridge requests (`<base>/bridge/request/<name>`, mqtt-api.md §3).
public enum RequestName: String, Sendable, Hashable, CaseIterable {
    case devices, refresh, transfer, remove
    case healthCheck = "health_check"
    case logLevel = "log_level"
}

/// The `error.code` values of the contract (mqtt-api.md §5).
public enum ErrorCode: String, Sendable, Hashable, CaseIterable {
    case invalidPayload = "invalid_payload"
    case unknownCommand = "unknown_command"
    case unknownDevice = "unknown_device"
    case deviceOffline = "device_offline"
    case noApp = "no_app"
    case noMediaSession = "no_media_session"
    case notSupported = "not_supported"
    case timeout
    case loadFailed = "load_failed"
    case loadCancelled = "load_cancelled"
    case launchError = "launch_error"
    case invalidRequest = "invalid_request"
    case invalidPlayerState = "invalid_player_state"
    case namespaceNotAllowed = "namespace_not_allowed"
    case payloadTooLarge = "payload_too_large"
    /// The device's queue of waiting commands is full, or the bridge is overloaded.
    case busy
    case `internal`

    /// A response's `status` when it is no error (and the metrics' label for it).
    public static let ok = "ok"
}

/// The leaves of a device's topics (`<base>/<dev>/<leaf>`, mqtt-api.md §4).
public enum DeviceLeaf: String, Sendable, Hashable, CaseIterable {
    case availability, info, receiver, media, state, event, response, members, command, message, keep

    /// Retained by the bridge (cleared when the device is removed); `members` only for a group.
    public var isRetained: Bool {
        switch self {
        case .availability, .info, .receiver, .media, .state, .members, .keep: return true
        case .event, .response, .command, .message: return false
        }
    }
}

/// The leaves of the bridge's own topics (`<base>/bridge/<leaf>`, mqtt-api.md §3).
public enum BridgeLeaf: String, Sendable, Hashable, CaseIterable {
    case state, info, devices, event, request, response
}
