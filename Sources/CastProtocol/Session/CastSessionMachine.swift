import Foundation

/// What one device's Cast connection knows about the device's session, as a value: the receiver
/// status, the app session it joined, the media status of that session (partial statuses merged
/// over the previous one), the transports that closed on it, group membership. It takes what
/// arrived (`receiverStatus`, `mediaStatus`, `transportClosed`, `multizone`, the connection
/// answering or ending) and returns actions; the client runs them, as it runs the connection
/// state machine's. Time comes in as a parameter; nothing here does I/O.
///
/// Its output upwards is `.publish(DeviceSnapshot)`: the whole device, each time something a
/// consumer can see changed, never twice the same. That is the one duplicate rule of the bridge:
/// a status equal to the last one, or one whose position only follows from the last one (a
/// reply and the broadcast of the same status, sent milliseconds apart, say the same thing), is
/// no change.
///
/// Rules:
/// - Joining: when the receiver shows an app with a transport, the machine joins it (CONNECT,
///   and media GET_STATUS when the app speaks the media namespace); it never launches or
///   reloads anything to get there.
/// - A transport that CLOSEd on us while the receiver still lists its app (the same session) is
///   joined again: the app still runs, only our virtual connection ended. At most
///   `maximumRejoins` times per session (a device that refuses our CONNECT answers it with
///   CLOSE; rejoining must not loop); then the app is shown without media and
///   `DeviceSnapshot.joinFailure` says why, until a status request (`retryClosedTransports`,
///   the bridge's `refresh`) or another session. A media status from the rejoined transport
///   proves the rejoin worked and resets the count.
/// - The media belongs to one app session: when the receiver shows another session (or none),
///   or the machine gives up rejoining its transport, the media is gone (while a closed
///   transport is joined again it stays, as the last known state).
/// - Offline keeps the last known receiver and media (a consumer shows the last known state);
///   a new connection starts a new generation and replaces them as the device answers.
public struct CastSessionMachine: Sendable {
    public enum Action: Sendable, Hashable {
        /// Open a virtual connection to the app's transport; with `askMedia`, ask its media status.
        case join(transport: String, askMedia: Bool)
        /// Close the virtual connection to a transport that is no longer the session's.
        case leave(transport: String)
        /// The transport closed on us: forget it (nothing to send).
        case forget(transport: String)
        /// Ask the platform for its receiver status (the joined app's transport closed).
        case askReceiverStatus
        /// Ask the multizone status (a group, on every connection).
        case askMultizoneStatus
        /// The device changed: here is all of it.
        case publish(DeviceSnapshot)
        /// Ask the joined app for its queue's item ids (QUEUE_GET_ITEM_IDS); report the end of
        /// the request with `queueRequestDone(.itemIds)`.
        case askQueueItemIds(transport: String, mediaSessionId: Int)
        /// Ask the joined app for these items' metadata (QUEUE_GET_ITEMS, at most
        /// `QueueMetadata.batchSize`); report the end with `queueRequestDone(.items(ids))`.
        case askQueueItems(transport: String, mediaSessionId: Int, itemIds: [Int])
    }

    /// What a queue request asked (for `queueRequestDone`).
    public enum QueueRequest: Sendable, Hashable {
        case itemIds
        case items([Int])
    }

    /// A position closer than this to where the last one would be by now is no change.
    public static let positionTolerance = 0.5

    /// Whether the device is a speaker group (its multizone status is asked on every connection).
    public private(set) var isGroup: Bool
    /// A group keeps at most this many members (a hostile device cannot grow it without end);
    /// member names are cut to `maximumMemberNameLength` characters.
    public static let maximumMembers = 128
    public static let maximumMemberNameLength = 256
    public static let maximumMemberIDLength = 64
    private var snapshot = DeviceSnapshot()
    private var lastPublished: DeviceSnapshot?
    /// The current connection's platform answered; `link` turns online with its first status.
    private var answered = false
    /// The joined app session lives in the snapshot (`DeviceSnapshot.joinedApp`): what the
    /// client sends to and what the bridge plans against are one value.
    private var joined: ReceiverApplication? {
        get { snapshot.joinedApp }
        set { snapshot.joinedApp = newValue }
    }
    /// CLOSEs from each transport of the current session (rejoins so far).
    private var closedTransports: [String: Int] = [:]
    /// Rejoins of a transport that closed on us, before the machine stops trying.
    public static let maximumRejoins = 3
    /// The media session's queue: order and item metadata (QueueMetadata.swift).
    private var queue = QueueMetadata()

    public init(isGroup: Bool = false) {
        self.isGroup = isGroup
    }

    /// The app session joined on the current connection.
    public var joinedApp: ReceiverApplication? { joined }
    /// Forget the transports that closed on us: the next receiver status joins its app again
    /// (a status request asked by a user: the bridge's `refresh`).
    public mutating func retryClosedTransports() {
        closedTransports.removeAll()
        snapshot.joinFailure = nil
    }

    /// The media status of the joined app's session.
    public var media: MediaStatus? { snapshot.media }
    public var receiver: ReceiverStatus? { snapshot.receiver }
    public var current: DeviceSnapshot { snapshot }

    // MARK: - Events

    /// The receiver platform answered on a new connection (its first status follows).
    public mutating func connectionAnswered() -> [Action] {
        answered = true
        joined = nil
        closedTransports.removeAll()
        snapshot.joinFailure = nil
        snapshot.generation += 1
        return isGroup ? [.askMultizoneStatus] : []
    }

    /// The device-auth check of a new connection ended. An admitted device's result is published
    /// with its first status, or at once when it comes later (under `report` the check runs
    /// beside the session); a refused one is offline (`unauthenticated`), published at once
    /// when that changes anything.
    public mutating func authenticated(_ result: DeviceAuthResult, admitted: Bool) -> [Action] {
        snapshot.authentication = result
        guard !admitted else { return snapshot.link == .online ? publishIfChanged() : [] }
        answered = false
        snapshot.link = .offline(reason: .unauthenticated(result.failure ?? .malformed), silentSince: nil)
        return publishIfChanged()
    }

    /// A connection that had answered ended. The last known state stays.
    public mutating func disconnected(_ reason: CastDisconnectReason, silentSince: Date?) -> [Action] {
        answered = false
        joined = nil
        closedTransports.removeAll()
        snapshot.link = .offline(reason: reason, silentSince: silentSince)
        return publishIfChanged()
    }

    /// A RECEIVER_STATUS (a reply or a broadcast).
    public mutating func receiverStatus(_ status: ReceiverStatus, now: Date) -> [Action] {
        var actions: [Action] = []
        let previous = snapshot.receiver?.activeApp
        let app = status.activeApp
        snapshot.receiver = status
        if answered { snapshot.link = .online }
        if previous?.sessionId != app?.sessionId || previous?.appId != app?.appId { clearMedia() }
        if let old = joined, old.sessionId != app?.sessionId || old.transportId != app?.transportId {
            if let transport = old.transportId { actions.append(.leave(transport: transport)) }
            joined = nil
            clearMedia()
        }
        if let app, let transport = app.transportId {
            let closes = closedTransports[transport] ?? 0
            if closes == 0 {
                closedTransports.removeAll()
                snapshot.joinFailure = nil
            }
            if closes <= Self.maximumRejoins {
                if joined == nil {
                    actions.append(.join(transport: transport, askMedia: app.namespaces.contains(CastNamespace.media)))
                }
                joined = app
            } else if snapshot.joinFailure == nil {
                clearMedia()
                snapshot.joinFailure = "\(app.displayName ?? app.appId) closed the bridge's connection to it "
                    + "\(closes) times; its media is not followed (refresh tries again)"
            }
        } else {
            closedTransports.removeAll()
            snapshot.joinFailure = nil
        }
        return actions + publishIfChanged()
    }

    /// A MEDIA_STATUS from the joined app's transport: its first entry, nil for an empty list.
    public mutating func mediaStatus(_ status: MediaStatus?, now: Date) -> [Action] {
        guard let transport = joined?.transportId else { return [] }
        // The (re)joined transport answers: it is followed again.
        if closedTransports[transport] != nil { closedTransports[transport] = 0 }
        guard let status else {
            clearMedia()
            return publishIfChanged()
        }
        let old = snapshot.media
        var merged = status.merged(over: old)
        queue.take(merged)
        if let items = queue.items { merged.items = items }
        guard merged != old, !onlyPositionFollows(merged, old, now: now) else { return queueRequests() }
        if old == nil || old?.currentTime != merged.currentTime || old?.playerState != merged.playerState
            || old?.playbackRate != merged.playbackRate || old?.mediaSessionId != merged.mediaSessionId {
            snapshot.positionAt = now
        }
        snapshot.media = merged
        return publishIfChanged() + queueRequests()
    }

    // MARK: - The queue's items

    /// QUEUE_ITEM_IDS from the joined app: the queue's order.
    public mutating func queueItemIds(_ ids: [Int]) -> [Action] {
        guard snapshot.media != nil else { return [] }
        queue.takeIds(ids)
        return applyQueue()
    }

    /// QUEUE_ITEMS from the joined app: metadata of some items.
    public mutating func queueItems(_ items: [QueueItem]) -> [Action] {
        guard snapshot.media != nil else { return [] }
        queue.takeItems(items)
        return applyQueue()
    }

    /// QUEUE_CHANGE from the joined app.
    public mutating func queueChange(_ change: QueueChange) -> [Action] {
        guard snapshot.media != nil else { return [] }
        queue.take(change)
        return applyQueue()
    }

    /// A queue request the machine asked for ended (answered, failed or timed out): the next one
    /// may go; items it did not bring are not asked again.
    public mutating func queueRequestDone(_ request: QueueRequest) -> [Action] {
        switch request {
        case .itemIds: queue.requestDone(.itemIds)
        case .items(let ids): queue.requestDone(.items(ids))
        }
        return publishQueueWhenComplete()
    }

    private mutating func applyQueue() -> [Action] {
        if let items = queue.items, snapshot.media?.items != items { snapshot.media?.items = items }
        return publishQueueWhenComplete()
    }

    /// The next queue request, and the snapshot once the queue's metadata is all there: a fetch
    /// of many batches is one publication, not one per batch (a status that changes anything
    /// else is published at once, as always).
    private mutating func publishQueueWhenComplete() -> [Action] {
        let next = queueRequests()
        guard queue.isComplete else { return next }
        return publishIfChanged() + next
    }

    /// The next queue request, when one is due and the app is joined.
    private mutating func queueRequests() -> [Action] {
        guard let transport = joined?.transportId, snapshot.media != nil, let session = queue.mediaSessionId,
              let next = queue.nextRequest() else { return [] }
        switch next {
        case .itemIds: return [.askQueueItemIds(transport: transport, mediaSessionId: session)]
        case .items(let ids): return [.askQueueItems(transport: transport, mediaSessionId: session, itemIds: ids)]
        }
    }

    /// The device CLOSEd the virtual connection of `endpoint`: when it is the joined app's, our
    /// connection to that session is over (its media with it); the platform is asked what runs
    /// now, and a status that still lists the same session joins it again (bounded).
    public mutating func transportClosed(_ endpoint: String) -> [Action] {
        guard let app = joined, app.transportId == endpoint else { return [] }
        closedTransports[endpoint, default: 0] += 1
        joined = nil
        // The media stays, as the last known state, while the platform is asked what runs: the
        // same session joined again brings its media status (no flicker to idle, no second
        // media_loaded); another session, none, or giving up clears it.
        return [.forget(transport: endpoint)] + publishIfChanged() + [.askReceiverStatus]
    }

    /// The device turned out to be a speaker group after its client was made (a static device
    /// that its `eureka_info` names as a group): its multizone status is asked now, when the
    /// connection answered, and on every connection from now on.
    public mutating func becomeGroup() -> [Action] {
        guard !isGroup else { return [] }
        isGroup = true
        return answered ? [.askMultizoneStatus] : []
    }

    /// A message on the multizone namespace.
    public mutating func multizone(_ message: MultizoneMessage) -> [Action] {
        var state = snapshot.multizone ?? MultizoneState()
        // An id longer than any real one (a UUID, dashed or not) is no member.
        func bounded(_ device: MultizoneDevice) -> MultizoneDevice? {
            guard device.deviceId.utf8.count <= Self.maximumMemberIDLength else { return nil }
            var device = device
            if let name = device.name, name.count > Self.maximumMemberNameLength {
                device.name = String(name.prefix(Self.maximumMemberNameLength))
            }
            return device
        }
        switch message {
        case .status(_, let devices, let isMultichannel, _):
            state.members = Array(devices.compactMap(bounded).prefix(Self.maximumMembers))
            state.isMultichannel = isMultichannel ?? false
        case .deviceAdded(let device):
            guard let device = bounded(device) else { return [] }
            if let index = state.members.firstIndex(where: { $0.deviceId == device.deviceId }) {
                state.members[index] = device
            } else if state.members.count < Self.maximumMembers {
                state.members.append(device)
            }
        case .deviceUpdated(let device):
            // Members come only from what the group says its members are (its status, ADDED,
            // REMOVED): an update of a device it does not list updates nothing (real groups send
            // them for devices of other groups and for the leader itself).
            guard let device = bounded(device),
                  let index = state.members.firstIndex(where: { $0.deviceId == device.deviceId }) else { return [] }
            state.members[index] = device
        case .deviceRemoved(let id):
            state.members.removeAll { $0.deviceId == id }
        case .getStatus, .playbackSessionUpdated, .unknown:
            return []
        }
        snapshot.multizone = state
        return publishIfChanged()
    }

    // MARK: - Helpers

    private mutating func clearMedia() {
        snapshot.media = nil
        snapshot.positionAt = nil
        queue.reset(session: nil)
    }

    /// True when `new` differs from `old` only in a position that follows from `old`'s while
    /// playing at the same rate.
    private func onlyPositionFollows(_ new: MediaStatus, _ old: MediaStatus?, now: Date) -> Bool {
        guard var old, old.playerState == "PLAYING", new.playerState == "PLAYING",
              let position = new.currentTime, let expected = snapshot.position(at: now) else { return false }
        old.currentTime = new.currentTime
        guard old == new else { return false }
        return abs(expected - position) < Self.positionTolerance
    }

    /// Publishes the snapshot when it changed and says something true of a connection: online
    /// (answered and its first status arrived) or offline. Between a new connection's answer and
    /// its first status nothing is published (the link would still say offline).
    private mutating func publishIfChanged() -> [Action] {
        let settled = snapshot.link != .unknown && answered == (snapshot.link == .online)
        guard settled, snapshot != lastPublished else { return [] }
        lastPublished = snapshot
        return [.publish(snapshot)]
    }
}
