import CastProtocol
import Foundation

/// Non-retained events on `<dev>/event` and `bridge/event`: `{"type", "at", ...}`.
extension BridgeCore {
    mutating func publishDeviceEvent(_ id: DeviceID, _ fields: [String: JSONValue], now: Date, _ out: inout BridgeOutput) {
        guard let device = devices[id] else { return }
        var body = fields
        body["at"] = .time(now)
        body["device"] = .string(device.topic)
        out.publish(Publication(topic: topics.event(device.topic), payload: JSONOutput.bytes(.object(body)), retain: false))
    }

    mutating func publishBridgeEvent(_ fields: [String: JSONValue], now: Date, _ out: inout BridgeOutput) {
        var body = fields
        body["at"] = .time(now)
        out.publish(Publication(topic: topics.bridgeEvent, payload: JSONOutput.bytes(.object(body)), retain: false))
    }

    /// Events from a receiver status change: session_started / session_ended.
    mutating func receiverEvents(_ id: DeviceID, old: ReceiverApplication?, new: ReceiverApplication?, now: Date,
                                 _ out: inout BridgeOutput) {
        if let old, old.sessionId != new?.sessionId || old.appId != new?.appId {
            publishDeviceEvent(id, ["type": .string("session_ended"), "app_id": .string(old.appId),
                                    "app_name": .str(old.displayName), "session_id": .str(old.sessionId)], now: now, &out)
        }
        if let new, old?.sessionId != new.sessionId || old?.appId != new.appId {
            if old == nil, consumeRestoredSession(id, new) { return }
            publishDeviceEvent(id, ["type": .string("session_started"), "app_id": .string(new.appId),
                                    "app_name": .str(new.displayName), "session_id": .str(new.sessionId),
                                    "launched_from_cloud": .flag(new.launchedFromCloud)], now: now, &out)
        }
    }

    /// Events from a media status change: media_loaded, media_finished, error.
    mutating func mediaEvents(_ id: DeviceID, old: MediaStatus?, new: MediaStatus?, oldPosition: Double?, now: Date,
                              _ out: inout BridgeOutput) {
        guard let new else { return }
        let contentId = new.effectiveMedia?.contentId ?? ""
        let oldContent = old?.effectiveMedia?.contentId ?? ""
        let active = new.playerState == "PLAYING" || new.playerState == "PAUSED" || new.playerState == "BUFFERING"
        let newSession = old?.mediaSessionId != new.mediaSessionId || oldContent != contentId
        if active, !contentId.isEmpty, newSession {
            publishDeviceEvent(id, ["type": .string("media_loaded"), "content_id": .string(contentId),
                                    "title": .str(new.effectiveMedia?.metadata?.title),
                                    "media_session_id": .int(new.mediaSessionId)], now: now, &out)
            observedTransferTarget(id, contentId: contentId, now: now, &out)
        }
        let becameIdle = new.playerState == "IDLE" && (old?.playerState != "IDLE" || old?.idleReason != new.idleReason)
        guard becameIdle else { return }
        switch new.idleReason {
        case "FINISHED":
            publishDeviceEvent(id, ["type": .string("media_finished"), "content_id": .str(contentId.isEmpty ? nil : contentId),
                                    "media_session_id": .int(new.mediaSessionId)], now: now, &out)
        case "ERROR":
            publishDeviceEvent(id, ["type": .string("error"), "message": .string("playback stopped with an error"),
                                    "content_id": .str(contentId.isEmpty ? nil : contentId)], now: now, &out)
        case "INTERRUPTED":
            if let old, !oldContent.isEmpty {
                recordTransferCandidate(id, contentId: oldContent, position: oldPosition ?? new.currentTime ?? old.currentTime, now: now)
            }
        default: break
        }
    }
}

