import CastProtocol
import Foundation

/// An ad break being played before the content (only position-0 breaks are simulated, and only
/// their first clip).
struct AdBreakState: Sendable, Hashable {
    var breakId: String
    var clipId: String
    var clipDuration: Double
    var whenSkippable: Double?
    /// Break time already played before `MediaSession.anchor`.
    var elapsed: Double
}

/// One media session of the Default Media Receiver. A pure value: every method takes the media
/// clock's `now`, so tests and the device drive it the same way.
///
/// The position is `basePosition + playbackRate * (now - anchor)` while PLAYING (clamped to the
/// duration), `basePosition` otherwise; every state change first "rebases" (folds the elapsed
/// time into `basePosition` and moves `anchor` to now).
struct MediaSession: Sendable {
    var mediaSessionId: Int
    /// Queue items with receiver-assigned itemIds (a plain LOAD is a queue of one).
    var items: [QueueItem]
    var currentIndex: Int
    /// True when loaded with QUEUE_LOAD or LOAD + queueData: MEDIA_STATUS then carries `items`.
    var isQueue: Bool
    var repeatMode: String
    /// `PLAYING` or `PAUSED`.
    var playerState: String
    var basePosition: Double
    var anchor: Double
    var playbackRate: Double
    var customData: JSONValue?
    var activeTrackIds: [Int]?
    var volume = StreamVolume(level: 1, muted: false)
    var adBreak: AdBreakState?
    var supportedMediaCommands: Int
    /// The id the next inserted item gets (ids are never reused within a session).
    var nextItemId = 1

    enum Progress: Equatable { case none, changed, itemEnded }

    var currentItem: QueueItem? { items.indices.contains(currentIndex) ? items[currentIndex] : nil }
    var media: MediaInformation? { currentItem?.media }

    /// Duration of the current item (its `playbackDuration` wins over the media's duration).
    var duration: Double? {
        if let d = currentItem?.playbackDuration, d > 0 { return d }
        if let d = media?.duration, d > 0 { return d }
        return nil
    }

    func position(at now: Double) -> Double {
        if adBreak != nil || playerState != "PLAYING" { return clamp(basePosition) }
        return clamp(basePosition + playbackRate * max(0, now - anchor))
    }

    private func clamp(_ value: Double) -> Double {
        var v = max(0, value)
        if let duration { v = min(v, duration) }
        return v
    }

    func breakTime(at now: Double) -> Double {
        guard let adBreak else { return 0 }
        return adBreak.elapsed + (playerState == "PLAYING" ? max(0, now - anchor) : 0)
    }

    mutating func rebase(at now: Double) {
        if adBreak != nil {
            let elapsed = breakTime(at: now)
            adBreak?.elapsed = elapsed
        } else {
            basePosition = position(at: now)
        }
        anchor = now
    }

    mutating func setPlaying(_ playing: Bool, at now: Double) {
        rebase(at: now)
        playerState = playing ? "PLAYING" : "PAUSED"
    }

    mutating func seek(to target: Double, at now: Double) {
        rebase(at: now)
        adBreak = nil
        basePosition = clamp(target)
    }

    mutating func setRate(_ rate: Double, at now: Double) {
        rebase(at: now)
        playbackRate = rate
    }

    mutating func skipAd(at now: Double) {
        guard adBreak != nil else { return }
        rebase(at: now)
        adBreak = nil
        anchor = now
    }

    /// Starts item `index` at `position`, entering its position-0 ad break if it has one.
    mutating func start(index: Int, position: Double, playing: Bool, at now: Double) {
        currentIndex = index
        if let ids = currentItem?.activeTrackIds { activeTrackIds = ids }
        basePosition = 0
        anchor = now
        playerState = playing ? "PLAYING" : "PAUSED"
        adBreak = position <= 0 ? MediaSession.openingBreak(of: media) : nil
        basePosition = clamp(position)
    }

    /// Advances the clock-driven state: ends an ad clip, or reports the end of the item.
    mutating func tick(at now: Double) -> Progress {
        if let adBreak {
            if breakTime(at: now) >= adBreak.clipDuration {
                rebase(at: now)
                self.adBreak = nil
                anchor = now
                return .changed
            }
            return .none
        }
        if playerState == "PLAYING", let duration, basePosition + playbackRate * max(0, now - anchor) >= duration {
            return .itemEnded
        }
        return .none
    }

    /// The index playing after the current one ends on its own; nil = the session finishes.
    var indexAfterEnd: Int? {
        switch repeatMode {
        case "REPEAT_SINGLE": return currentIndex
        case "REPEAT_ALL", "REPEAT_ALL_AND_SHUFFLE": return (currentIndex + 1) % max(items.count, 1)
        default: return currentIndex + 1 < items.count ? currentIndex + 1 : nil
        }
    }

    /// The index `jump` items away; nil past either end of the queue (unless repeating all).
    func index(jumpingBy jump: Int) -> Int? {
        let target = currentIndex + jump
        if items.indices.contains(target) { return target }
        if repeatMode == "REPEAT_ALL" || repeatMode == "REPEAT_ALL_AND_SHUFFLE", !items.isEmpty {
            return ((target % items.count) + items.count) % items.count
        }
        return nil
    }

    /// The queue as MEDIA_STATUS lists it: item ids only (a sender asks the items' metadata
    /// with QUEUE_GET_ITEMS, as with a real receiver's longer queues).
    var itemIds: [QueueItem] { items.map { QueueItem(itemId: $0.itemId, media: nil, autoplay: nil) } }

    /// The next item, once the current one has no more than that item's `preloadTime` left.
    func preloadedItemId(at now: Double) -> Int? {
        guard let next = indexAfterEnd, next != currentIndex, let preload = items[next].preloadTime, preload > 0,
              let duration, playerState == "PLAYING", adBreak == nil else { return nil }
        return duration - position(at: now) <= preload ? items[next].itemId : nil
    }

    func status(at now: Double) -> MediaStatus {
        var status = MediaStatus(
            mediaSessionId: mediaSessionId, media: media, playerState: playerState,
            currentTime: position(at: now), playbackRate: playbackRate,
            supportedMediaCommands: supportedMediaCommands, volume: volume, activeTrackIds: activeTrackIds,
            currentItemId: currentItem?.itemId, preloadedItemId: isQueue ? preloadedItemId(at: now) : nil,
            items: isQueue ? itemIds : nil, repeatMode: isQueue ? repeatMode : nil)
        if let adBreak {
            status.breakStatus = BreakStatus(
                breakId: adBreak.breakId, breakClipId: adBreak.clipId, currentBreakTime: breakTime(at: now),
                currentBreakClipTime: breakTime(at: now), whenSkippable: adBreak.whenSkippable)
        }
        if let type = media?.contentType?.lowercased(), type.hasPrefix("video/") {
            status.videoInfo = VideoInfo(width: 1920, height: 1080, hdrType: "sdr")
        }
        return status
    }

    /// A final IDLE status (the session is over after it).
    func idleStatus(reason: String, at now: Double) -> MediaStatus {
        var status = MediaStatus(
            mediaSessionId: mediaSessionId, media: media, playerState: "IDLE", idleReason: reason,
            currentTime: position(at: now), playbackRate: playbackRate,
            supportedMediaCommands: supportedMediaCommands, volume: volume,
            currentItemId: currentItem?.itemId, items: isQueue ? itemIds : nil,
            repeatMode: isQueue ? repeatMode : nil)
        status.activeTrackIds = activeTrackIds
        return status
    }

    /// The `LoadRequestData` that recreates this session (STORE_SESSION, stream transfer).
    func loadRequestSnapshot(at now: Double) -> JSONValue {
        var request: [String: JSONValue] = [
            "autoplay": .bool(playerState == "PLAYING"),
            "currentTime": .number(position(at: now)),
            "playbackRate": .number(playbackRate),
        ]
        if let media, let value = MediaSession.jsonValue(media) { request["media"] = value }
        if let customData { request["customData"] = customData }
        if let activeTrackIds { request["activeTrackIds"] = .array(activeTrackIds.map { .number(Double($0)) }) }
        if isQueue {
            let plain = items.map { item -> QueueItem in
                var copy = item
                copy.itemId = nil
                return copy
            }
            var queue: [String: JSONValue] = [
                "startIndex": .number(Double(currentIndex)), "repeatMode": .string(repeatMode),
            ]
            if let value = MediaSession.jsonValue(plain) { queue["items"] = value }
            request["queueData"] = .object(queue)
        }
        return .object(request)
    }

    static func openingBreak(of media: MediaInformation?) -> AdBreakState? {
        guard let breaks = media?.breaks?.arrayValue else { return nil }
        guard let opening = breaks.first(where: { ($0["position"]?.doubleValue ?? -1) == 0 }) else { return nil }
        let breakId = opening["id"]?.stringValue ?? "break-0"
        let clipIds = opening["breakClipIds"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let clips = media?.breakClips?.arrayValue ?? []
        let clipId = clipIds.first ?? clips.first?["id"]?.stringValue ?? "clip-0"
        let clip = clips.first { $0["id"]?.stringValue == clipId }
        let duration = clip?["duration"]?.doubleValue ?? opening["duration"]?.doubleValue ?? 10
        return AdBreakState(breakId: breakId, clipId: clipId, clipDuration: max(duration, 0.001),
                            whenSkippable: clip?["whenSkippable"]?.doubleValue, elapsed: 0)
    }

    static func jsonValue<T: Encodable>(_ value: T) -> JSONValue? {
        guard let text = try? CastJSON.encode(value) else { return nil }
        return try? CastJSON.decode(JSONValue.self, from: text)
    }

    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue?) -> T? {
        guard let value, let text = try? CastJSON.encode(value) else { return nil }
        return try? CastJSON.decode(type, from: text)
    }
}
