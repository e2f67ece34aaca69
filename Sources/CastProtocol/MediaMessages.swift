/// LOAD request body (without type/requestId), in the Cast `LoadRequestData` shape.
public struct LoadRequest: Sendable, Hashable {
    public var media: MediaInformation
    public var autoplay: Bool
    public var currentTime: Double?
    public var playbackRate: Double?
    public var activeTrackIds: [Int]?
    public var queueData: JSONValue?
    public var credentials: String?
    public var customData: JSONValue?

    public init(media: MediaInformation, autoplay: Bool = true, currentTime: Double? = nil,
                playbackRate: Double? = nil, activeTrackIds: [Int]? = nil, queueData: JSONValue? = nil,
                credentials: String? = nil, customData: JSONValue? = nil) {
        self.media = media
        self.autoplay = autoplay
        self.currentTime = currentTime
        self.playbackRate = playbackRate
        self.activeTrackIds = activeTrackIds
        self.queueData = queueData
        self.credentials = credentials
        self.customData = customData
    }
}

/// QUEUE_LOAD request body.
public struct QueueLoadRequest: Sendable, Hashable {
    public var items: [QueueItem]
    public var startIndex: Int
    /// `REPEAT_OFF`, `REPEAT_ALL`, `REPEAT_SINGLE`, `REPEAT_ALL_AND_SHUFFLE`.
    public var repeatMode: String
    public var currentTime: Double?
    public var customData: JSONValue?

    public init(items: [QueueItem], startIndex: Int = 0, repeatMode: String = "REPEAT_OFF",
                currentTime: Double? = nil, customData: JSONValue? = nil) {
        self.items = items
        self.startIndex = startIndex
        self.repeatMode = repeatMode
        self.currentTime = currentTime
        self.customData = customData
    }
}

/// Requests on `urn:x-cast:com.google.cast.media` (destination: the app's transportId).
public enum MediaRequest: Sendable, Hashable {
    case getStatus(mediaSessionId: Int?)
    case load(LoadRequest)
    case queueLoad(QueueLoadRequest)
    case play(mediaSessionId: Int)
    case pause(mediaSessionId: Int)
    case stop(mediaSessionId: Int)
    /// `resumeState`: `PLAYBACK_START` or `PLAYBACK_PAUSE`.
    case seek(mediaSessionId: Int, currentTime: Double?, relativeTime: Double?, resumeState: String?)
    case setPlaybackRate(mediaSessionId: Int, rate: Double)
    case setStreamVolume(mediaSessionId: Int, level: Double?, muted: Bool?)
    case queueNext(mediaSessionId: Int)
    case queuePrev(mediaSessionId: Int)
    case queueUpdate(QueueUpdateRequest)
    case queueInsert(QueueInsertRequest)
    case queueRemove(mediaSessionId: Int, itemIds: [Int])
    case queueReorder(mediaSessionId: Int, itemIds: [Int], insertBefore: Int?)
    /// Asks the ids of every item in the queue (answered with QUEUE_ITEM_IDS).
    case queueGetItemIds(mediaSessionId: Int)
    /// Asks the items with these ids (answered with QUEUE_ITEMS).
    case queueGetItems(mediaSessionId: Int, itemIds: [Int])
    case editTracksInfo(EditTracksRequest)
    case skipAd(mediaSessionId: Int)
    case storeSession(mediaSessionId: Int?)
    case resumeSession(sessionState: JSONValue)

    public var type: String {
        switch self {
        case .getStatus: return "GET_STATUS"
        case .load: return "LOAD"
        case .queueLoad: return "QUEUE_LOAD"
        case .play: return "PLAY"
        case .pause: return "PAUSE"
        case .stop: return "STOP"
        case .seek: return "SEEK"
        case .setPlaybackRate: return "SET_PLAYBACK_RATE"
        case .setStreamVolume: return "SET_VOLUME"
        case .queueNext: return "QUEUE_NEXT"
        case .queuePrev: return "QUEUE_PREV"
        case .queueUpdate: return "QUEUE_UPDATE"
        case .queueInsert: return "QUEUE_INSERT"
        case .queueRemove: return "QUEUE_REMOVE"
        case .queueReorder: return "QUEUE_REORDER"
        case .queueGetItemIds: return "QUEUE_GET_ITEM_IDS"
        case .queueGetItems: return "QUEUE_GET_ITEMS"
        case .editTracksInfo: return "EDIT_TRACKS_INFO"
        case .skipAd: return "SKIP_AD"
        case .storeSession: return "STORE_SESSION"
        case .resumeSession: return "RESUME_SESSION"
        }
    }

    struct Wire: Encodable {
        var type: String
        var requestId: Int
        var mediaSessionId: Int?
        var media: MediaInformation?
        var autoplay: Bool?
        var currentTime: Double?
        var relativeTime: Double?
        var resumeState: String?
        var playbackRate: Double?
        var activeTrackIds: [Int]?
        var queueData: JSONValue?
        var credentials: String?
        var customData: JSONValue?
        var items: [QueueItem]?
        var startIndex: Int?
        var repeatMode: String?
        var volume: StreamVolume?
        var jump: Int?
        var sessionState: JSONValue?
        var itemIds: [Int]?
        var insertBefore: Int?
        var currentItemId: Int?
        var currentItemIndex: Int?
        var shuffle: Bool?
        var textTrackStyle: JSONValue?
    }

    /// The JSON text with `requestId`.
    public func json(requestId: Int) -> String {
        directJSON(requestId: requestId) ?? wireJSON(requestId: requestId)
    }

    /// The same through `JSONEncoder` (every request; `directJSON`'s tests compare against it).
    func wireJSON(requestId: Int) -> String {
        var w = Wire(type: type, requestId: requestId)
        switch self {
        case .getStatus(let id): w.mediaSessionId = id
        case .load(let r):
            w.media = r.media
            w.autoplay = r.autoplay
            w.currentTime = r.currentTime
            w.playbackRate = r.playbackRate
            w.activeTrackIds = r.activeTrackIds
            w.queueData = r.queueData
            w.credentials = r.credentials
            w.customData = r.customData
        case .queueLoad(let r):
            w.items = r.items
            w.startIndex = r.startIndex
            w.repeatMode = r.repeatMode
            w.currentTime = r.currentTime
            w.customData = r.customData
        case .play(let id), .pause(let id), .stop(let id), .queueNext(let id), .queuePrev(let id), .skipAd(let id):
            w.mediaSessionId = id
        case .seek(let id, let time, let relative, let resume):
            w.mediaSessionId = id
            w.currentTime = time
            w.relativeTime = relative
            w.resumeState = resume
        case .setPlaybackRate(let id, let rate):
            w.mediaSessionId = id
            w.playbackRate = rate
        case .setStreamVolume(let id, let level, let muted):
            w.mediaSessionId = id
            w.volume = StreamVolume(level: level, muted: muted)
        case .queueUpdate(let r):
            w.mediaSessionId = r.mediaSessionId
            w.currentItemId = r.currentItemId
            w.jump = r.jump
            w.repeatMode = r.repeatMode
            w.shuffle = r.shuffle
        case .queueInsert(let r):
            w.mediaSessionId = r.mediaSessionId
            w.items = r.items
            w.insertBefore = r.insertBefore
            w.currentItemIndex = r.currentItemIndex
        case .queueRemove(let id, let ids):
            w.mediaSessionId = id
            w.itemIds = ids
        case .queueReorder(let id, let ids, let before):
            w.mediaSessionId = id
            w.itemIds = ids
            w.insertBefore = before
        case .queueGetItemIds(let id):
            w.mediaSessionId = id
        case .queueGetItems(let id, let ids):
            w.mediaSessionId = id
            w.itemIds = ids
        case .editTracksInfo(let r):
            w.mediaSessionId = r.mediaSessionId
            w.activeTrackIds = r.activeTrackIds
            w.textTrackStyle = r.textTrackStyle
        case .storeSession(let id): w.mediaSessionId = id
        case .resumeSession(let state): w.sessionState = state
        }
        return (try? CastJSON.encode(w)) ?? #"{"type":"\#(type)","requestId":\#(requestId)}"#
    }
}

/// An error reply on the media namespace.
public struct MediaError: Codable, Sendable, Hashable {
    /// `ERROR`, `INVALID_PLAYER_STATE`, `INVALID_REQUEST`, `LOAD_CANCELLED`, `LOAD_FAILED`.
    public var type: String
    public var requestId: Int?
    public var reason: String?
    public var detailedErrorCode: Int?
    public var itemId: Int?
    public var customData: JSONValue?

    public init(type: String, requestId: Int?, reason: String? = nil, detailedErrorCode: Int? = nil,
                itemId: Int? = nil, customData: JSONValue? = nil) {
        self.type = type
        self.requestId = requestId
        self.reason = reason
        self.detailedErrorCode = detailedErrorCode
        self.itemId = itemId
        self.customData = customData
    }

    public static let types: Set<String> = ["ERROR", "INVALID_PLAYER_STATE", "INVALID_REQUEST", "LOAD_CANCELLED", "LOAD_FAILED"]
}

/// Incoming messages on the media namespace.
public enum MediaResponse: Sendable, Hashable {
    /// MEDIA_STATUS; the array may be empty (no media session).
    case status(requestId: Int, [MediaStatus])
    case error(MediaError)
    /// SESSION_STATE answering STORE_SESSION.
    case sessionState(requestId: Int, JSONValue)
    /// QUEUE_ITEMS answering QUEUE_GET_ITEMS.
    case queueItems(requestId: Int, [QueueItem])
    /// QUEUE_ITEM_IDS answering QUEUE_GET_ITEM_IDS.
    case queueItemIds(requestId: Int, [Int])
    /// QUEUE_CHANGE: the queue changed (a broadcast, or the answer to a queue edit).
    case queueChange(requestId: Int, QueueChange)
    case unknown(type: String?)

    struct StatusWire: Decodable { var status: [MediaStatus]? }
    struct StateWire: Decodable { var sessionState: JSONValue? }
    struct ItemsWire: Decodable { var items: [Lenient<QueueItem>]? }
    struct IdsWire: Decodable { var itemIds: [Int]? }

    public static func parse(_ payload: CastPayload) throws -> MediaResponse {
        try parse(payload, parsedStatus: true)
    }

    /// The same with MEDIA_STATUS decoded by `JSONDecoder` (the reference the parsed path is
    /// checked against: tests and the payload fuzzer).
    public static func parseWithJSONDecoder(_ payload: CastPayload) throws -> MediaResponse {
        try parse(payload, parsedStatus: false)
    }

    /// MEDIA_STATUS's list from the parsed document, nil when it must be left to `JSONDecoder`.
    private static func parsedStatusList(_ text: String) -> [MediaStatus]? {
        guard case .object(let top)? = JSONValue.parse(text) else { return nil }
        let doubt = ParseDoubt()
        let list = isTopLevelStatus(top) ? [MediaStatus(parsed: top, doubt)] : MediaStatus.parsedList(top["status"], doubt)
        return doubt.unsure ? nil : list
    }

    /// A MEDIA_STATUS whose fields stand at the top level (no `status` list, as a real receiver
    /// sent one) is one status entry: no `status` (or a null one) and a string `playerState`.
    static func isTopLevelStatus(_ top: [String: JSONValue]) -> Bool {
        guard top["status"] == nil || top["status"] == .null else { return false }
        if case .string? = top["playerState"] { return true }
        return false
    }

    private static func parse(_ payload: CastPayload, parsedStatus: Bool) throws -> MediaResponse {
        guard let text = payload.text else { throw CastMessageError.invalid("binary payload on the media namespace") }
        // The header through the one-pass scanner: the status itself is then decoded once.
        guard let header = CastPayloadHeader.parse(payload) else {
            throw CastMessageError.invalid("media payload is not a JSON object")
        }
        switch header.type {
        case "MEDIA_STATUS":
            if parsedStatus, let list = parsedStatusList(text) { return .status(requestId: header.requestId ?? 0, list) }
            let wire = (try? CastJSON.decode(StatusWire.self, from: text)) ?? StatusWire(status: nil)
            if wire.status == nil, case .object(let top)? = try? CastJSON.decode(JSONValue.self, from: text), isTopLevelStatus(top) {
                let entry = try? CastJSON.decode(MediaStatus.self, from: text)
                return .status(requestId: header.requestId ?? 0, entry.map { [$0] } ?? [])
            }
            return .status(requestId: header.requestId ?? 0, wire.status ?? [])
        case "SESSION_STATE":
            let wire = (try? CastJSON.decode(StateWire.self, from: text)) ?? StateWire(sessionState: nil)
            return .sessionState(requestId: header.requestId ?? 0, wire.sessionState ?? .null)
        case "QUEUE_ITEMS":
            // Items that do not decode (or have no id) are left out, never the whole answer.
            let wire = (try? CastJSON.decode(ItemsWire.self, from: text)) ?? ItemsWire(items: nil)
            let items = (wire.items ?? []).compactMap { $0.value.flatMap { $0.itemId == nil ? nil : $0 } }
            return .queueItems(requestId: header.requestId ?? 0, items)
        case "QUEUE_ITEM_IDS":
            let wire = (try? CastJSON.decode(IdsWire.self, from: text)) ?? IdsWire(itemIds: nil)
            return .queueItemIds(requestId: header.requestId ?? 0, wire.itemIds ?? [])
        case "QUEUE_CHANGE":
            let change = (try? CastJSON.decode(QueueChange.self, from: text)) ?? QueueChange(changeType: nil)
            return .queueChange(requestId: header.requestId ?? 0, change)
        case let type? where MediaError.types.contains(type):
            var error = (try? CastJSON.decode(MediaError.self, from: text)) ?? MediaError(type: type, requestId: nil)
            error.requestId = header.requestId
            return .error(error)
        default:
            return .unknown(type: header.type)
        }
    }

    /// Builds the JSON a device sends (used by the simulator).
    public func json() -> String {
        struct StatusOut: Encodable { var type = "MEDIA_STATUS"; var requestId: Int; var status: [MediaStatus] }
        struct StateOut: Encodable { var type = "SESSION_STATE"; var requestId: Int; var sessionState: JSONValue }
        struct ItemsOut: Encodable { var type = "QUEUE_ITEMS"; var requestId: Int; var items: [QueueItem] }
        struct IdsOut: Encodable { var type = "QUEUE_ITEM_IDS"; var requestId: Int; var itemIds: [Int] }
        struct ChangeOut: Encodable {
            var type = "QUEUE_CHANGE"
            var requestId: Int
            var changeType: String?
            var itemIds: [Int]?
            var insertBefore: Int?
            var reorderItemIds: [Int]?
            var sequenceNumber: Int?
        }
        switch self {
        case .status(let id, let status): return (try? CastJSON.encode(StatusOut(requestId: id, status: status))) ?? "{}"
        case .sessionState(let id, let state): return (try? CastJSON.encode(StateOut(requestId: id, sessionState: state))) ?? "{}"
        case .queueItems(let id, let items): return (try? CastJSON.encode(ItemsOut(requestId: id, items: items))) ?? "{}"
        case .queueItemIds(let id, let ids): return (try? CastJSON.encode(IdsOut(requestId: id, itemIds: ids))) ?? "{}"
        case .queueChange(let id, let c):
            return (try? CastJSON.encode(ChangeOut(requestId: id, changeType: c.changeType, itemIds: c.itemIds,
                                                   insertBefore: c.insertBefore, reorderItemIds: c.reorderItemIds,
                                                   sequenceNumber: c.sequenceNumber))) ?? "{}"
        case .error(let error): return (try? CastJSON.encode(error)) ?? "{}"
        case .unknown(let type): return #"{"type":"\#(type ?? "UNKNOWN")"}"#
        }
    }
}

/// A list element that decodes to nil instead of failing the whole list.
struct Lenient<T: Decodable>: Decodable {
    var value: T?
    init(from decoder: any Decoder) throws { value = try? T(from: decoder) }
}
