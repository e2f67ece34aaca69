import Foundation

/// Everything one Cast connection knows about its device, as a whole value: what
/// `CastSessionMachine` hands upwards each time something changed. The bridge keeps the newest
/// snapshot of each device as it comes; it never merges a second copy.
public struct DeviceSnapshot: Sendable, Hashable {
    /// Whether the device can be talked to.
    public enum Link: Sendable, Hashable {
        /// Not answered yet in this run (connecting, or backing off before the first answer).
        case unknown
        /// The receiver platform answered on the current connection (MQTT `availability` online).
        case online
        /// A connection that had answered ended. `silentSince` is when the device last sent
        /// anything (a dead link is noticed only after `heartbeat_timeout` of silence).
        case offline(reason: CastDisconnectReason, silentSince: Date?)
    }

    /// Counts the connections that answered: every `online` starts a new generation, and its
    /// `offline` carries the same number. Inputs of one device are ordered by it.
    public var generation: Int
    public var link: Link
    /// The last receiver status (kept while offline: the last known state).
    public var receiver: ReceiverStatus?
    /// The media status of the running app's session, merged over the previous partial ones;
    /// nil when there is no media session. Kept out of line (`OutOfLine`): most devices have
    /// none, and the snapshot is kept several times per device.
    @OutOfLine public var media: MediaStatus?
    /// When `media.currentTime` was true (the arrival of the status that changed it).
    public var positionAt: Date?
    /// Speaker group membership, for a device that answers on the multizone namespace.
    public var multizone: MultizoneState?
    /// The app session the client joined on the current connection (its transport is where
    /// media and app messages go); nil when none is joined. A command planned against the
    /// snapshot decides from this whether its app must be launched first.
    public var joinedApp: ReceiverApplication?
    /// The device-auth result of the newest connection that ran the check (nil: never checked,
    /// the policy is `off`).
    public var authentication: DeviceAuthResult?
    /// Why the running app's media is not followed: its transport closed the connection to it
    /// more often than `CastSessionMachine.maximumRejoins` allows (nil: followed, or no app).
    public var joinFailure: String?

    public init(generation: Int = 0, link: Link = .unknown, receiver: ReceiverStatus? = nil, media: MediaStatus? = nil,
                positionAt: Date? = nil, multizone: MultizoneState? = nil, joinedApp: ReceiverApplication? = nil,
                authentication: DeviceAuthResult? = nil) {
        self.generation = generation
        self.link = link
        self.receiver = receiver
        self.media = media
        self.positionAt = positionAt
        self.multizone = multizone
        self.joinedApp = joinedApp
        self.authentication = authentication
    }

    public var isOnline: Bool { link == .online }

    /// The running app unless it is the idle screen.
    public var activeApp: ReceiverApplication? { receiver?.activeApp }

    /// The media position at `now`, extrapolated while playing (never past the duration),
    /// rounded to milliseconds.
    public func position(at now: Date) -> Double? {
        guard let media, let time = media.currentTime else { return nil }
        guard media.playerState == "PLAYING", let since = positionAt else { return time }
        var position = time + max(0, now.timeIntervalSince(since)) * (media.playbackRate ?? 1)
        if let duration = media.effectiveMedia?.duration, duration > 0 { position = min(position, duration) }
        return (position * 1000).rounded() / 1000
    }
}

/// Members of a speaker group as the group's multizone namespace reports them.
public struct MultizoneState: Sendable, Hashable {
    /// In the order the device listed them.
    public var members: [MultizoneDevice]
    /// A stereo pair (`isMultichannel`).
    public var isMultichannel: Bool

    public init(members: [MultizoneDevice] = [], isMultichannel: Bool = false) {
        self.members = members
        self.isMultichannel = isMultichannel
    }
}

extension MediaStatus {
    /// A session with something playing, paused or buffering: what an announcement restores and
    /// a transfer moves. (One definition for the whole bridge.)
    public var isActive: Bool {
        guard let content = effectiveMedia?.contentId, !content.isEmpty else { return false }
        return playerState == "PLAYING" || playerState == "PAUSED" || playerState == "BUFFERING"
    }
}
