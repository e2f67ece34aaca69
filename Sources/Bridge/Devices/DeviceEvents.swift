import CastProtocol
import Foundation

/// Non-retained events on `<dev>/event` and `bridge/event` (`{"type", "at", ...}`) as a part:
/// what a device's change means as events, pure. The core adds `at` (and `device`) and publishes
/// them; what a transfer observer must learn from the change (`media`'s `loadedContent`,
/// `interrupted`) is handed back with them.
enum DeviceEvents {
    /// `session_ended` / `session_started`, from a change of the running app's session. A
    /// session a previous run saved and that still runs is joined silently (`restored`): no
    /// `session_started`.
    static func session(_ change: DeviceChange, restored: Bool) -> [[String: JSONValue]] {
        var events: [[String: JSONValue]] = []
        if let old = change.oldApp {
            events.append(["type": .string("session_ended"), "app_id": .string(old.appId),
                           "app_name": .str(old.displayName), "session_id": .str(old.sessionId)])
        }
        if let new = change.newApp, !(change.oldApp == nil && restored) {
            events.append(["type": .string("session_started"), "app_id": .string(new.appId),
                           "app_name": .str(new.displayName), "session_id": .str(new.sessionId),
                           "launched_from_cloud": .flag(new.launchedFromCloud)])
        }
        return events
    }

    /// What a change of a device's media means.
    struct Media: Sendable {
        /// `media_loaded`, when new content started.
        var loaded: [String: JSONValue]?
        /// The content that started (a transfer's destination is recognised by it).
        var loadedContent: String?
        /// `media_finished` or `error`, when playback ended.
        var ended: [String: JSONValue]?
        /// Content that was interrupted (another sender took the device): a transfer's source.
        var interrupted: (contentId: String, position: Double?)?
    }

    /// media_loaded, media_finished, error — and what a transfer observer needs to know.
    static func media(_ change: DeviceChange) -> Media {
        var result = Media()
        guard let new = change.newMedia else { return result }
        let old = change.oldMedia
        let contentId = new.effectiveMedia?.contentId ?? ""
        let oldContent = old?.effectiveMedia?.contentId ?? ""
        // Media that plays is loaded content, also when the app names no content id (real
        // receivers send `"contentId": ""` for streams of their own): then its media session says
        // it is new, and no transfer can recognise it.
        let playing: Bool
        switch new.playerState {
        case "PLAYING", "PAUSED", "BUFFERING": playing = true
        default: playing = false
        }
        let anonymous = contentId.isEmpty && playing && new.mediaSessionId != nil && new.effectiveMedia != nil
        if new.isActive || anonymous, old?.mediaSessionId != new.mediaSessionId || oldContent != contentId {
            result.loaded = ["type": .string("media_loaded"), "content_id": .str(contentId),
                             "title": .str(new.effectiveMedia?.metadata?.title), "media_session_id": .int(new.mediaSessionId)]
            if !contentId.isEmpty { result.loadedContent = contentId }
        }
        let becameIdle = new.playerState == "IDLE" && (old?.playerState != "IDLE" || old?.idleReason != new.idleReason)
        guard becameIdle else { return result }
        switch new.idleReason {
        case "FINISHED":
            result.ended = ["type": .string("media_finished"), "content_id": .str(contentId.isEmpty ? nil : contentId),
                            "media_session_id": .int(new.mediaSessionId)]
        case "ERROR":
            result.ended = ["type": .string("error"), "message": .string("playback stopped with an error"),
                            "content_id": .str(contentId.isEmpty ? nil : contentId)]
        case "INTERRUPTED":
            if let old, !oldContent.isEmpty {
                result.interrupted = (oldContent, change.oldPosition ?? new.currentTime ?? old.currentTime)
            }
        default: break
        }
        return result
    }

    /// `stream_transferred` (on the bridge and on both devices).
    static func transferred(from: String, to: String, contentId: String?, position: Double?) -> [String: JSONValue] {
        ["type": .string("stream_transferred"), "from": .string(from), "to": .string(to), "content_id": .str(contentId),
         "position": .num(position)]
    }

    /// A device's `event` publication: the fields with `at` and `device` added.
    static func deviceEvent(_ fields: [String: JSONValue], topics: TopicGrammar, device: String, now: Date) -> Publication {
        var body = fields
        body["at"] = .time(now)
        body["device"] = .string(device)
        return Publication(topic: topics.event(device), payload: JSONOutput.bytes(.object(body)), retain: false)
    }

    /// A `bridge/event` publication: the fields with `at` added.
    static func bridgeEvent(_ fields: [String: JSONValue], topics: TopicGrammar, now: Date) -> Publication {
        var body = fields
        body["at"] = .time(now)
        return Publication(topic: topics.bridgeEvent, payload: JSONOutput.bytes(.object(body)), retain: false)
    }

    /// `device_added`, `device_updated`, `device_removed` on `bridge/event`.
    static func deviceListEvent(_ type: String, _ d: DeviceRecord) -> [String: JSONValue] {
        ["type": .string(type), "id": .string(d.id), "name": .string(d.descriptor.friendlyName), "topic": .string(d.topic)]
    }
}
