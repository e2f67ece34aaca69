import CastProtocol
import NIOCore

/// The mutable state of one simulated device. It lives in a `NIOLoopBoundBox` bound to the
/// device's event loop (`SimulatedDevice.loop`): reading or writing it anywhere else stops the
/// program, so the confinement the rest of the simulator relies on is checked, not assumed.
struct DeviceLoopState: Sendable {
    var listener: (any Channel)?
    /// The device's `eureka_info` listeners (HTTP and HTTPS), when on.
    var eurekaListeners: [EurekaTransport: any Channel] = [:]
    /// How `eureka_info` answers (the `eureka` control action).
    var eurekaBehaviour = EurekaBehaviour()
    var connections: [Int: SenderConnection] = [:]
    var connectionCounter = 0
    /// Since when two or more sender connections are open (nil: fewer).
    var overlapSince: NIODeadline?
    var silenced = false
    var refusingAppConnections = false
    var swallowFirstMessages = 0
    var answeringPingsOnly = false
    var volumeAfterReply: Double?
    var replyLatencyOverride: TimeAmount?
    var shutDown = false
    var app: RunningApp?
    var volume: ReceiverVolume
    var media: MediaSession?
    var mediaSessionCounter = 0
    /// `sequenceNumber` of the last QUEUE_CHANGE.
    var queueChangeCounter = 0
    var heartbeatTask: RepeatedTask?
    var tickTask: RepeatedTask?
    var rebind: Scheduled<Void>?
    var hostileTask: RepeatedTask?
    var hostileRound = 0
    var hostileReplyMode: HostileReplyMode = .brokenBody
    var hostileReplyBudget = 0
    /// Set when this device is a group's endpoint (`SimulatedDevice+Group.swift`).
    var group: GroupState?
    /// The groups this device is a member of, by group id (`SimulatedDevice+Member.swift`).
    var memberships: [String: Membership] = [:]
    /// The group whose playback this member shows (the group's app, no media of its own).
    var followedGroup: String?
    /// How AuthChallenges are answered (the `device_auth` fault action).
    var authBehaviour: DeviceAuthBehaviour = .correct
    /// The nonce of the last challenge answered (what `replayed_nonce` echoes).
    var lastAuthNonce: [UInt8]?
    /// The device's credentials per kind (made on first use).
    var authCredentials: [DeviceAuthBehaviour: DeviceCredentials] = [:]
    /// Real devices' messages this device speaks (`SimulatedDevice+Replay.swift`).
    var replay = ReplayState()
    /// The display apps' settings and the page and display timeouts (SimulatedDevice+Display.swift).
    var display: DisplaySettings

    init(volume: ReceiverVolume, display: DisplaySettings) {
        self.volume = volume
        self.display = display
    }
}

// The device state by name, each access checked to be on the device's event loop (forwarded to
// `loop.value`, which preconditions it).
extension SimulatedDevice {
    var listener: (any Channel)? {
        get { loop.value.listener }
        set { loop.value.listener = newValue }
    }
    var connections: [Int: SenderConnection] {
        get { loop.value.connections }
        set { loop.value.connections = newValue }
    }
    var connectionCounter: Int {
        get { loop.value.connectionCounter }
        set { loop.value.connectionCounter = newValue }
    }
    var silenced: Bool {
        get { loop.value.silenced }
        set { loop.value.silenced = newValue }
    }
    /// Fault: CONNECTs to the running app's transport are refused with CLOSE (as a device does
    /// for a sender it does not allow).
    var refusingAppConnections: Bool {
        get { loop.value.refusingAppConnections }
        set { loop.value.refusingAppConnections = newValue }
    }
    /// Fault: every new sender connection loses its first this-many messages (a device still
    /// booting, or a congested Wi-Fi eating the handshake).
    var swallowFirstMessages: Int {
        get { loop.value.swallowFirstMessages }
        set { loop.value.swallowFirstMessages = newValue }
    }
    /// Fault: answer PINGs and nothing else (the platform is not up, the transport is).
    var answeringPingsOnly: Bool {
        get { loop.value.answeringPingsOnly }
        set { loop.value.answeringPingsOnly = newValue }
    }
    /// Fault: right after answering a SET_VOLUME, a remote changes the volume to this level (a
    /// broadcast that follows the reply on the wire: the newer state arrives last).
    var volumeAfterReply: Double? {
        get { loop.value.volumeAfterReply }
        set { loop.value.volumeAfterReply = newValue }
    }
    /// Fault: replies take this long instead of `configuration.replyLatency`.
    var replyLatencyOverride: TimeAmount? {
        get { loop.value.replyLatencyOverride }
        set { loop.value.replyLatencyOverride = newValue }
    }
    /// How long the device takes to answer a request.
    var replyDelay: TimeAmount { replyLatencyOverride ?? configuration.replyLatency }
    var shutDown: Bool {
        get { loop.value.shutDown }
        set { loop.value.shutDown = newValue }
    }
    var app: RunningApp? {
        get { loop.value.app }
        set { loop.value.app = newValue }
    }
    var volume: ReceiverVolume {
        get { loop.value.volume }
        set { loop.value.volume = newValue }
    }
    var media: MediaSession? {
        get { loop.value.media }
        set { loop.value.media = newValue }
    }
    var queueChangeCounter: Int {
        get { loop.value.queueChangeCounter }
        set { loop.value.queueChangeCounter = newValue }
    }
    var mediaSessionCounter: Int {
        get { loop.value.mediaSessionCounter }
        set { loop.value.mediaSessionCounter = newValue }
    }
    var heartbeatTask: RepeatedTask? {
        get { loop.value.heartbeatTask }
        set { loop.value.heartbeatTask = newValue }
    }
    var tickTask: RepeatedTask? {
        get { loop.value.tickTask }
        set { loop.value.tickTask = newValue }
    }
    var rebind: Scheduled<Void>? {
        get { loop.value.rebind }
        set { loop.value.rebind = newValue }
    }
    /// Hostile mode (`startHostile`): the repeating task and how many rounds it sent.
    var hostileTask: RepeatedTask? {
        get { loop.value.hostileTask }
        set { loop.value.hostileTask = newValue }
    }
    var hostileRound: Int {
        get { loop.value.hostileRound }
        set { loop.value.hostileRound = newValue }
    }
    /// Armed broken replies (`armHostileReplies`): the kind and how many requests still get them.
    var hostileReplyMode: HostileReplyMode {
        get { loop.value.hostileReplyMode }
        set { loop.value.hostileReplyMode = newValue }
    }
    var hostileReplyBudget: Int {
        get { loop.value.hostileReplyBudget }
        set { loop.value.hostileReplyBudget = newValue }
    }
}
