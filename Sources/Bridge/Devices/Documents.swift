import CastProtocol
import Foundation

/// Projects Cast state onto the retained documents of §4: `receiver`, `media`, `state`, `info`.
/// Documents are JSONValue objects; `updated_at` is added by the publisher and never counts as change.
enum Documents {
    /// `off` (no app, or the idle screen), `idle` (an app, no media playing), `buffering`, `playing`, `paused`.
    static func stateWord(app: ReceiverApplication?, media: MediaStatus?) -> String {
        guard app != nil else { return "off" }
        guard let media else { return "idle" }
        if media.extendedStatus?.playerState == "LOADING" && (media.playerState == nil || media.playerState == "IDLE") {
            return "buffering"
        }
        switch media.playerState {
        case "PLAYING": return "playing"
        case "PAUSED": return "paused"
        case "BUFFERING", "LOADING": return "buffering"
        default: return "idle"
        }
    }

    static func receiverDocument(_ status: ReceiverStatus?) -> JSONValue {
        let app = status?.activeApp
        let volume = status?.volume
        let idleScreen = status?.runningApp?.isIdle ?? false
        return .object([
            "app_id": .str(app?.appId),
            "app_name": .str(app?.displayName),
            "session_id": .str(app?.sessionId),
            "status_text": .str(app?.statusText),
            "idle_screen": .bool(idleScreen),
            "standby": .flag(status?.isStandBy),
            "active_input": .flag(status?.isActiveInput),
            "volume": .object([
                "level": .num(volume?.level.map { (($0 * 1000).rounded()) / 1000 }),
                "muted": .flag(volume?.muted),
                "control_type": .str(volume?.controlType),
                "step": .num(volume?.stepInterval),
            ]),
            "namespaces": .array((app?.namespaces ?? []).map(JSONValue.string)),
        ])
    }

    /// MQTT names of `supportedMediaCommands`, as the contract spells them.
    static func commandNames(_ commands: MediaCommands) -> [String] {
        commands.names.map { name in
            switch name {
            case "stream_volume": return "volume"
            case "stream_mute": return "mute"
            default: return name
            }
        }
    }

    static func repeatWord(_ mode: String?) -> JSONValue {
        switch mode {
        case nil: return .null
        case "REPEAT_OFF": return .string("off")
        case "REPEAT_ALL": return .string("all")
        case "REPEAT_SINGLE": return .string("one")
        case "REPEAT_ALL_AND_SHUFFLE": return .string("all_and_shuffle")
        case let other?: return .string(other.lowercased())
        }
    }

    /// The `media` document. `position` is `estimatedPosition` when given (periodic republish).
    static func mediaDocument(_ device: DeviceRecord, position: Double? = nil, positionAt: Date? = nil) -> JSONValue {
        guard let status = device.media else {
            return .object(["state": .string(device.activeApp == nil ? "off" : "idle")])
        }
        let info = status.effectiveMedia
        let meta = info?.metadata
        let state = stateWord(app: device.activeApp ?? ReceiverApplication(appId: "?"), media: status)
        var images: JSONValue = .array([])
        if let list = meta?.images {
            images = .array(imageDocuments(list))
        }
        var queue: JSONValue = .null
        if let items = status.items, !items.isEmpty {
            queue = .object([
                "current_item_id": .int(status.currentItemId),
                "repeat_mode": repeatWord(status.repeatMode),
                "items": .array(items.map(queueItemDocument)),
            ])
        } else if status.repeatMode != nil || status.currentItemId != nil {
            queue = .object(["current_item_id": .int(status.currentItemId), "repeat_mode": repeatWord(status.repeatMode),
                             "items": .array([])])
        }
        var breakStatus: JSONValue = .null
        if let b = status.breakStatus {
            breakStatus = .object(["break_id": .str(b.breakId), "break_clip_id": .str(b.breakClipId),
                                   "current_break_time": .num(b.currentBreakTime),
                                   "current_break_clip_time": .num(b.currentBreakClipTime),
                                   "when_skippable": .num(b.whenSkippable)])
        }
        var videoInfo: JSONValue = .null
        if let v = status.videoInfo {
            videoInfo = .object(["width": .int(v.width), "height": .int(v.height), "hdr_type": .str(v.hdrType)])
        }
        let metadataType: JSONValue = meta.map { .string(MetadataType(rawValue: $0.metadataType ?? 0)?.name ?? "generic") } ?? .null
        return .object([
            "state": .string(state),
            "idle_reason": .str(status.playerState == "IDLE" ? status.idleReason?.lowercased() : nil),
            "media_session_id": .int(status.mediaSessionId),
            "content_id": .str(info.flatMap { $0.contentId.isEmpty ? nil : $0.contentId }),
            "content_url": .str(info?.contentUrl),
            "content_type": .str(info?.contentType),
            "stream_type": .str(info?.streamType?.lowercased()),
            "duration": .num(info?.duration.flatMap { $0 > 0 ? $0 : nil }),
            "position": .num(position ?? status.currentTime),
            "position_updated_at": .time(positionAt ?? device.snapshot.positionAt),
            "playback_rate": .num(status.playbackRate),
            "title": .str(meta?.title),
            "subtitle": .str(meta?.subtitle),
            "artist": .str(meta?.artist),
            "album": .str(meta?.albumName),
            "album_artist": .str(meta?.albumArtist),
            "series_title": .str(meta?.seriesTitle),
            "season": .int(meta?.season),
            "episode": .int(meta?.episode),
            "track": .int(meta?.trackNumber),
            "images": images,
            "metadata_type": metadataType,
            "supported_commands": .array(commandNames(status.commands).map(JSONValue.string)),
            "queue": queue,
            "break_status": breakStatus,
            "video_info": videoInfo,
            "tracks": .array((info?.trackList ?? []).map(trackDocument)),
            "active_tracks": .array((status.activeTrackIds ?? []).map { .int($0) }),
            "app_id": .str(device.activeApp?.appId),
        ])
    }

    /// One entry of `media.queue.items`; the metadata keys are null until the device described
    /// the item (a queue listed by ids is described in batches: QUEUE_GET_ITEMS).
    static func queueItemDocument(_ item: QueueItem) -> JSONValue {
        let meta = item.media?.metadata
        return .object([
            "item_id": .int(item.itemId), "content_id": .str(item.media?.contentId), "title": .str(meta?.title),
            "artist": .str(meta?.artist), "duration": .num(item.media?.duration.flatMap { $0 > 0 ? $0 : nil }),
            "autoplay": .flag(item.autoplay),
            "images": .array(imageDocuments(meta?.images ?? [])),
        ])
    }

    /// Images as documents; one without a URL (real receivers send `{"url": ""}`) is no image.
    static func imageDocuments(_ images: [CastImage]) -> [JSONValue] {
        images.compactMap { image in
            image.url.isEmpty ? nil : .object(["url": .string(image.url), "width": .int(image.width), "height": .int(image.height)])
        }
    }

    /// One entry of `media.tracks`: `type` and `subtype` in lower case.
    static func trackDocument(_ track: MediaTrack) -> JSONValue {
        .object(["id": .int(track.trackId), "type": .string(track.type.lowercased()), "subtype": .str(track.subtype?.lowercased()),
                 "language": .str(track.language), "name": .str(track.name), "content_id": .str(track.trackContentId)])
    }

    static func infoDocument(_ d: DeviceDescriptor, topic: String) -> JSONValue {
        .object([
            "id": .string(d.id), "name": .string(d.friendlyName), "topic": .string(topic),
            "model": .str(d.model), "manufacturer": .str(d.manufacturer), "cast_type": .string(d.castType.rawValue),
            "address": .string(d.host), "port": .int(d.port),
            "capabilities": .array(d.capabilities.map(JSONValue.string)), "source": .string(d.source.rawValue),
        ])
    }

    /// `bridge/devices` (and the `devices` request's answer): every device, by topic name.
    static func devicesDocument(_ registry: DeviceRegistry) -> JSONValue {
        .array(registry.ids.compactMap { registry[$0] }.sorted { $0.topic < $1.topic }.map { d in
            let entry = JSONValue.object([
                "id": .string(d.id), "name": .string(d.descriptor.friendlyName), "topic": .string(d.topic),
                "model": .str(d.descriptor.model), "cast_type": .string(d.descriptor.castType.rawValue),
                "address": .string(d.descriptor.host), "port": .int(d.descriptor.port), "online": .bool(d.online),
                "source": .string(d.descriptor.source.rawValue),
            ])
            // Why a device is kept offline (device authentication), only when it is.
            return offlineReason(d.snapshot).map { entry.adding("reason", .string($0)) } ?? entry
        })
    }
}
