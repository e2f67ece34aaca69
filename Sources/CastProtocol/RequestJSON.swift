/// The JSON of the requests we send most (a volume, a pause, a seek, a status request), written
/// straight into a `JSONValue` object and out through its writer instead of through
/// `JSONEncoder`: in a cold command turn the `Encodable` path was ~14 % of the loop thread's
/// time. The bytes are the same as `CastJSON.encode` gives for the `Wire` structs (keys sorted,
/// absent fields left out); `RequestJSONTests` compares the two for every case. A request
/// carrying anything else (media, items, app data) or a number the writer would print
/// differently (non-finite, an integer too large for a `Double`) returns nil and takes the
/// `Wire` path.
struct RequestJSON {
    private var object: [String: JSONValue]
    private var representable = true

    init(type: String, requestId: Int) {
        object = ["type": .string(type)]
        int("requestId", requestId)
    }

    /// Integers the writer prints as integers: below 9e15 in magnitude.
    private static let largestInteger = 9_000_000_000_000_000

    mutating func int(_ key: String, _ value: Int?) {
        guard let value else { return }
        guard value.magnitude < Self.largestInteger else {
            representable = false
            return
        }
        object[key] = .number(Double(value))
    }

    mutating func double(_ key: String, _ value: Double?) {
        guard let value else { return }
        guard value.isFinite else {
            representable = false
            return
        }
        object[key] = .number(value)
    }

    mutating func string(_ key: String, _ value: String?) {
        if let value { object[key] = .string(value) }
    }

    mutating func strings(_ key: String, _ values: [String]) {
        object[key] = .array(values.map(JSONValue.string))
    }

    mutating func bool(_ key: String, _ value: Bool?) {
        if let value { object[key] = .bool(value) }
    }

    mutating func ints(_ key: String, _ values: [Int]?) {
        guard let values else { return }
        guard values.allSatisfy({ $0.magnitude < Self.largestInteger }) else {
            representable = false
            return
        }
        object[key] = .array(values.map { .number(Double($0)) })
    }

    mutating func object(_ key: String, _ build: (inout RequestJSON) -> Void) {
        var inner = RequestJSON()
        build(&inner)
        if !inner.representable { representable = false }
        object[key] = .object(inner.object)
    }

    private init() { object = [:] }

    /// The text, or nil when a value cannot be written the way `JSONEncoder` writes it.
    var text: String? {
        representable ? String(decoding: JSONValue.object(object).jsonBytes, as: UTF8.self) : nil
    }
}

extension ReceiverRequest {
    /// Every receiver request is written directly (nil only for a non-finite level).
    func directJSON(requestId: Int) -> String? {
        var json = RequestJSON(type: type, requestId: requestId)
        switch self {
        case .getStatus: break
        case .launch(let appId): json.string("appId", appId)
        case .stop(let sessionId): json.string("sessionId", sessionId)
        case .setVolume(let level): json.object("volume") { $0.double("level", min(max(level, 0), 1)) }
        case .setMuted(let muted): json.object("volume") { $0.bool("muted", muted) }
        case .getAppAvailability(let ids): json.strings("appId", ids)
        }
        return json.text
    }
}

extension MediaRequest {
    /// The transport and queue-editing requests, written directly; nil for those that carry
    /// media, items, app data or a style (`Wire` through `JSONEncoder`).
    func directJSON(requestId: Int) -> String? {
        var json = RequestJSON(type: type, requestId: requestId)
        switch self {
        case .getStatus(let id), .storeSession(let id):
            json.int("mediaSessionId", id)
        case .play(let id), .pause(let id), .stop(let id), .queueNext(let id), .queuePrev(let id), .skipAd(let id),
             .queueGetItemIds(let id):
            json.int("mediaSessionId", id)
        case .seek(let id, let time, let relative, let resume):
            json.int("mediaSessionId", id)
            json.double("currentTime", time)
            json.double("relativeTime", relative)
            json.string("resumeState", resume)
        case .setPlaybackRate(let id, let rate):
            json.int("mediaSessionId", id)
            json.double("playbackRate", rate)
        case .setStreamVolume(let id, let level, let muted):
            json.int("mediaSessionId", id)
            json.object("volume") {
                $0.double("level", level)
                $0.bool("muted", muted)
            }
        case .queueRemove(let id, let ids), .queueGetItems(let id, let ids):
            json.int("mediaSessionId", id)
            json.ints("itemIds", ids)
        case .queueReorder(let id, let ids, let before):
            json.int("mediaSessionId", id)
            json.ints("itemIds", ids)
            json.int("insertBefore", before)
        case .load, .queueLoad, .queueUpdate, .queueInsert, .editTracksInfo, .resumeSession:
            return nil
        }
        return json.text
    }
}
