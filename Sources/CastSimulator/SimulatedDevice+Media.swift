import CastProtocol
import Foundation
import Logging
import Synchronization
import NIOCore
import NIOPosix
import NIOSSL

// The media namespace of a simulated device: LOAD, queue, transport controls, the media clock.
extension SimulatedDevice {
    // MARK: - Media namespace

    func handleMedia(_ message: CastMessage, on connection: SenderConnection) {
        guard let running = app, let json = Self.parseJSON(message.payload), let type = json["type"]?.stringValue
        else { return }
        let requestId = json["requestId"]?.intValue ?? 0
        let endpoint = running.transportId
        let source = message.sourceID
        let now = configuration.clock.now()

        func error(_ type: String, _ reason: String?, detailed: Int? = nil, itemId: Int? = nil) {
            let body = MediaResponse.error(MediaError(type: type, requestId: requestId, reason: reason,
                                                      detailedErrorCode: detailed, itemId: itemId)).json()
            reply(body, from: endpoint, namespace: CastNamespace.media, to: source, on: connection)
        }
        func status(broadcast: Bool = true) {
            let statuses = media.map { [$0.status(at: now)] } ?? []
            reply(MediaResponse.status(requestId: requestId, statuses).json(), from: endpoint,
                  namespace: CastNamespace.media, to: source, on: connection,
                  thenBroadcast: broadcast ? MediaResponse.status(requestId: 0, statuses).json() : nil)
        }
        func finalStatus(_ ended: MediaStatus) {
            reply(MediaResponse.status(requestId: requestId, [ended]).json(), from: endpoint,
                  namespace: CastNamespace.media, to: source, on: connection,
                  thenBroadcast: MediaResponse.status(requestId: 0, [ended]).json())
        }

        switch type {
        case "GET_STATUS":
            status(broadcast: false)
            return
        case "LOAD", "QUEUE_LOAD", "RESUME_SESSION":
            if type == "LOAD" { recorder.count { $0.loads += 1 } }
            var request = json
            if type == "RESUME_SESSION" {
                guard let data = json["sessionState"]?["loadRequestData"] else {
                    error("INVALID_REQUEST", "INVALID_PARAMS")
                    return
                }
                request = data
            }
            switch load(request, queue: type == "QUEUE_LOAD", at: now) {
            case .success:
                status()
            case .failure(let failure):
                if let idle = failure.idleStatus {
                    let body = MediaResponse.error(failure.error(requestId: requestId)).json()
                    reply(body, from: endpoint, namespace: CastNamespace.media, to: source, on: connection,
                          thenBroadcast: MediaResponse.status(requestId: 0, [idle]).json())
                } else {
                    error(failure.type, failure.reason)
                }
            }
            return
        default:
            break
        }

        guard var session = media else {
            let known: Set<String> = ["PLAY", "PAUSE", "STOP", "SEEK", "SET_PLAYBACK_RATE", "SET_VOLUME", "QUEUE_NEXT",
                                      "QUEUE_PREV", "QUEUE_UPDATE", "SKIP_AD", "STORE_SESSION"]
            if known.contains(type) || Self.queueMessageTypes.contains(type) { error("INVALID_PLAYER_STATE", nil) } else { error("INVALID_REQUEST", "INVALID_COMMAND") }
            return
        }
        if let id = json["mediaSessionId"]?.intValue, id != session.mediaSessionId {
            error("INVALID_REQUEST", "INVALID_MEDIA_SESSION_ID")
            return
        }
        let context = MediaReplyContext(requestId: requestId, endpoint: endpoint, source: source, connection: connection, now: now)
        if handleQueueMessage(type, json, session: session, context) { return }
        if type == "QUEUE_UPDATE", json["shuffle"]?.boolValue == true, json["jump"] == nil, json["currentItemId"] == nil {
            if let mode = json["repeatMode"]?.stringValue { session.repeatMode = mode }
            shuffleQueue(session, context)
            return
        }
        switch type {
        case "PLAY": session.setPlaying(true, at: now)
        case "PAUSE": session.setPlaying(false, at: now)
        case "STOP":
            media = nil
            finalStatus(session.idleStatus(reason: "CANCELLED", at: now))
            return
        case "SEEK":
            let target: Double
            if let relative = json["relativeTime"]?.doubleValue {
                target = session.position(at: now) + relative
            } else if let absolute = json["currentTime"]?.doubleValue {
                target = absolute
            } else {
                target = session.position(at: now)
            }
            session.seek(to: target, at: now)
            switch json["resumeState"]?.stringValue {
            case "PLAYBACK_START": session.setPlaying(true, at: now)
            case "PLAYBACK_PAUSE": session.setPlaying(false, at: now)
            default: break
            }
        case "SET_PLAYBACK_RATE":
            let rate = json["playbackRate"]?.doubleValue
                ?? json["relativePlaybackRate"]?.doubleValue.map { $0 * session.playbackRate }
            guard let rate, rate.isFinite, rate > 0, rate <= 16 else {
                error("INVALID_REQUEST", "INVALID_PARAMS")
                return
            }
            session.setRate(rate, at: now)
        case "SET_VOLUME":
            guard let body = json["volume"]?.objectValue else {
                error("INVALID_REQUEST", "INVALID_PARAMS")
                return
            }
            if let level = body["level"]?.doubleValue, level.isFinite { session.volume.level = min(max(level, 0), 1) }
            if let muted = body["muted"]?.boolValue { session.volume.muted = muted }
        case "QUEUE_NEXT", "QUEUE_PREV", "QUEUE_UPDATE":
            if let mode = json["repeatMode"]?.stringValue { session.repeatMode = mode }
            var targetIndex: Int?
            if type == "QUEUE_NEXT" {
                targetIndex = session.index(jumpingBy: 1)
            } else if type == "QUEUE_PREV" {
                targetIndex = session.index(jumpingBy: -1)
            } else if let itemId = json["currentItemId"]?.intValue {
                targetIndex = session.items.firstIndex { $0.itemId == itemId }
            } else if let jump = json["jump"]?.intValue {
                targetIndex = session.index(jumpingBy: jump)
            } else {
                media = session  // e.g. only a repeatMode change
                status()
                return
            }
            guard let index = targetIndex else {
                error("INVALID_REQUEST", "END_OF_QUEUE")
                return
            }
            let playing = session.playerState == "PLAYING"
            session.start(index: index, position: json["currentTime"]?.doubleValue ?? 0, playing: playing, at: now)
        case "SKIP_AD": session.skipAd(at: now)
        case "STORE_SESSION":
            let state = JSONValue.object(["loadRequestData": session.loadRequestSnapshot(at: now)])
            reply(MediaResponse.sessionState(requestId: requestId, state).json(), from: endpoint,
                  namespace: CastNamespace.media, to: source, on: connection)
            return
        default:
            error("INVALID_REQUEST", "INVALID_COMMAND")
            return
        }
        media = session
        status()
    }

    struct LoadFailure: Error {
        var type: String
        var reason: String?
        var detailedErrorCode: Int?
        var itemId: Int?
        var idleStatus: MediaStatus?

        func error(requestId: Int) -> MediaError {
            MediaError(type: type, requestId: requestId, reason: reason, detailedErrorCode: detailedErrorCode,
                       itemId: itemId)
        }
    }

    /// The failing-URL rule: a contentId/contentUrl containing `fail` (any case) cannot be
    /// loaded; `fail-<code>` picks the `detailedErrorCode` (default 104 MEDIA_SRC_NOT_SUPPORTED).
    static func failureCode(for media: MediaInformation) -> Int? {
        for text in [media.contentId, media.contentUrl ?? ""] {
            let lower = text.lowercased()
            guard let range = lower.range(of: "fail") else { continue }
            let rest = lower[range.upperBound...]
            if rest.hasPrefix("-") {
                let digits = rest.dropFirst().prefix { $0.isNumber }
                if let code = Int(digits), code > 0 { return code }
            }
            return 104
        }
        return nil
    }

    /// Starts a new media session from a LOAD / QUEUE_LOAD / RESUME_SESSION request body.
    func load(_ request: JSONValue, queue: Bool, at now: Double) -> Result<Void, LoadFailure> {
        var items: [QueueItem]
        var startIndex = 0
        var repeatMode = "REPEAT_OFF"
        var isQueue = queue
        let queueSource = queue ? request : request["queueData"]
        if let rawItems = queueSource?["items"], let decoded = MediaSession.decode([QueueItem].self, from: rawItems),
           !decoded.isEmpty {
            items = decoded
            isQueue = true
            startIndex = queueSource?["startIndex"]?.intValue ?? 0
            repeatMode = queueSource?["repeatMode"]?.stringValue ?? request["repeatMode"]?.stringValue ?? "REPEAT_OFF"
        } else if queue {
            return .failure(LoadFailure(type: "INVALID_REQUEST", reason: "INVALID_PARAMS"))
        } else {
            guard let media = MediaSession.decode(MediaInformation.self, from: request["media"]),
                  !media.contentId.isEmpty || media.contentUrl != nil
            else {
                return .failure(LoadFailure(type: "INVALID_REQUEST", reason: "INVALID_PARAMS"))
            }
            items = [QueueItem(media: media, autoplay: request["autoplay"]?.boolValue ?? true)]
        }
        guard items.indices.contains(startIndex), items.allSatisfy({ $0.media != nil }) else {
            return .failure(LoadFailure(type: "INVALID_REQUEST", reason: "INVALID_PARAMS"))
        }
        for index in items.indices { items[index].itemId = index + 1 }
        mediaSessionCounter += 1
        let autoplay = request["autoplay"]?.boolValue ?? items[startIndex].autoplay ?? true
        var session = MediaSession(
            mediaSessionId: mediaSessionCounter, items: items, currentIndex: startIndex, isQueue: isQueue,
            repeatMode: repeatMode, playerState: "PLAYING", basePosition: 0, anchor: now,
            playbackRate: request["playbackRate"]?.doubleValue.flatMap { $0 > 0 && $0 <= 16 ? $0 : nil } ?? 1,
            customData: request["customData"], activeTrackIds: request["activeTrackIds"]?.arrayValue?.compactMap(\.intValue),
            supportedMediaCommands: configuration.supportedMediaCommands)
        session.nextItemId = items.count + 1
        if let media = session.media, let code = Self.failureCode(for: media) {
            let itemId = session.currentItem?.itemId ?? 1
            let idle = session.idleStatus(reason: "ERROR", at: now)
            self.media = nil
            return .failure(LoadFailure(type: "LOAD_FAILED", reason: nil, detailedErrorCode: code, itemId: itemId,
                                        idleStatus: idle))
        }
        let start = request["currentTime"]?.doubleValue ?? items[startIndex].startTime ?? 0
        session.start(index: startIndex, position: start, playing: autoplay, at: now)
        media = session
        // A media load keeps a display's own timeout away.
        if app != nil { app?.lastActivity = now }
        // A member that showed its group's playback now plays on its own.
        loop.value.followedGroup = nil
        return .success(())
    }

    // MARK: - Media clock

    func tick() {
        guard var session = media, let running = app else { return }
        let now = configuration.clock.now()
        switch session.tick(at: now) {
        case .none:
            return
        case .changed:
            media = session
        case .itemEnded:
            if let next = session.indexAfterEnd {
                // An item with `autoplay: false` waits, paused, at its start.
                let item = session.items[next]
                session.start(index: next, position: item.startTime ?? 0, playing: item.autoplay ?? true, at: now)
                media = session
            } else {
                media = nil
                var ended = session.idleStatus(reason: "FINISHED", at: now)
                ended.currentTime = session.duration ?? ended.currentTime
                broadcast(from: running.transportId, namespace: CastNamespace.media,
                          json: MediaResponse.status(requestId: 0, [ended]).json())
                return
            }
        }
        broadcast(from: running.transportId, namespace: CastNamespace.media,
                  json: MediaResponse.status(requestId: 0, [session.status(at: now)]).json())
    }

    func sendPings() {
        // While silenced, `send` withholds (and counts) them.
        for connection in connections.values {
            for source in connection.sources(connectedTo: CastEndpoint.receiver) {
                send(CastMessage(source: CastEndpoint.receiver, destination: source, namespace: CastNamespace.heartbeat,
                                 json: HeartbeatMessage.ping.json()), on: connection)
            }
        }
    }

    static func parseJSON(_ payload: CastPayload) -> JSONValue? {
        guard let text = payload.text, let value = try? CastJSON.decode(JSONValue.self, from: text),
              value.objectValue != nil
        else { return nil }
        return value
    }
}
