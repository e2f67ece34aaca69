/// MEDIA_STATUS read from a parsed `JSONValue` (`JSONValue.parse`, one pass) instead of through
/// `JSONDecoder`, which was half of a status's work on the loop (the status path's cold turn).
/// The rules are those of the `Decodable` inits, type by type: the lenient ones (`MediaStatus`,
/// `MediaInformation`, `MediaMetadata`) drop a field of the wrong type; the synthesized ones
/// (`StreamVolume`, `QueueItem`, `BreakStatus`, `VideoInfo`, `ExtendedStatus`, `CastImage`) are
/// absent as a whole when one field has the wrong type, and an array is absent when one element
/// is. Integers follow `JSONDecoder`: a number with an exact integral value. An integer of
/// 2^53 or more cannot be read from a `Double` the way `JSONDecoder` reads it from the text, so
/// such a document takes the `JSONDecoder` path whole (`Doubt`), as does one the parser refuses.
/// `MediaResponse.parseWithJSONDecoder` is the reference; `MediaStatusParsedTests` and the
/// payload fuzzer compare the two.
extension MediaStatus {
    /// The `status` array of MEDIA_STATUS: empty when it is not an array or one entry is not an
    /// object (as `[MediaStatus]` fails whole).
    static func parsedList(_ value: JSONValue?, _ doubt: ParseDoubt) -> [MediaStatus] {
        guard case .array(let items)? = value else { return [] }
        var out: [MediaStatus] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .object(let fields) = item else { return [] }
            out.append(MediaStatus(parsed: fields, doubt))
        }
        return out
    }

    init(parsed o: [String: JSONValue], _ doubt: ParseDoubt) {
        self.init()
        mediaSessionId = o["mediaSessionId"].strictInt(doubt).lenient
        media = o["media"].strictMedia(doubt).lenient
        playerState = o["playerState"].strictString().lenient
        idleReason = o["idleReason"].strictString().lenient
        currentTime = o["currentTime"].strictDouble().lenient
        playbackRate = o["playbackRate"].strictDouble().lenient
        supportedMediaCommands = o["supportedMediaCommands"].strictInt(doubt).lenient
        volume = o["volume"].strictObject(StreamVolume.init(parsed:)).lenient
        activeTrackIds = o["activeTrackIds"].strictInts(doubt).lenient
        currentItemId = o["currentItemId"].strictInt(doubt).lenient
        loadingItemId = o["loadingItemId"].strictInt(doubt).lenient
        preloadedItemId = o["preloadedItemId"].strictInt(doubt).lenient
        items = o["items"].strictArray { QueueItem(parsed: $0, doubt) }.lenient
        queueData = o["queueData"].anyJSON
        repeatMode = o["repeatMode"].strictString().lenient
        breakStatus = o["breakStatus"].strictObject(BreakStatus.init(parsed:)).lenient
        liveSeekableRange = o["liveSeekableRange"].anyJSON
        videoInfo = o["videoInfo"].strictObject { VideoInfo(parsed: $0, doubt) }.lenient
        extendedStatus = o["extendedStatus"].strictObject { ExtendedStatus(parsed: $0, doubt) }.lenient
        customData = o["customData"].anyJSON
    }
}

extension MediaStatus.ExtendedStatus {
    init?(parsed o: [String: JSONValue], _ doubt: ParseDoubt) {
        guard let playerState = take(o["playerState"].strictString()), let media = take(o["media"].strictMedia(doubt)),
              let mediaSessionId = take(o["mediaSessionId"].strictInt(doubt)) else { return nil }
        self.init(playerState: playerState, media: media, mediaSessionId: mediaSessionId)
    }
}

extension MediaInformation {
    /// Lenient, as `init(from:)`: a field of the wrong type is absent, `contentId` "" without one.
    init(parsed o: [String: JSONValue], _ doubt: ParseDoubt) {
        self.init(contentId: o["contentId"].strictString().lenient ?? "",
                  contentUrl: o["contentUrl"].strictString().lenient,
                  streamType: o["streamType"].strictString().lenient,
                  contentType: o["contentType"].strictString().lenient,
                  metadata: o["metadata"].strictObject { MediaMetadata(parsed: $0, doubt) }.lenient,
                  duration: o["duration"].strictDouble().lenient,
                  customData: o["customData"].anyJSON,
                  tracks: o["tracks"].anyJSON,
                  textTrackStyle: o["textTrackStyle"].anyJSON,
                  breaks: o["breaks"].anyJSON,
                  breakClips: o["breakClips"].anyJSON,
                  entity: o["entity"].strictString().lenient,
                  hlsSegmentFormat: o["hlsSegmentFormat"].strictString().lenient)
    }
}

extension MediaMetadata {
    /// Lenient, as `init(from:)`, including its other spellings and numbers given as text.
    init(parsed o: [String: JSONValue], _ doubt: ParseDoubt) {
        func string(_ key: String) -> String? { o[key].strictString().lenient }
        func int(_ key: String) -> Int? {
            switch o[key].strictInt(doubt) {
            case .value(let i): return i
            case .absent: return nil
            case .wrong: return string(key).flatMap { Int($0) }
            }
        }
        self.init(metadataType: int("metadataType"),
                  title: string("title") ?? string("songName") ?? string("episodeTitle"),
                  subtitle: string("subtitle"),
                  artist: string("artist") ?? string("artistName"),
                  albumName: string("albumName"), albumArtist: string("albumArtist"), composer: string("composer"),
                  seriesTitle: string("seriesTitle"),
                  season: int("season") ?? int("seasonNumber"),
                  episode: int("episode") ?? int("episodeNumber"),
                  trackNumber: int("trackNumber"), discNumber: int("discNumber"), studio: string("studio"),
                  releaseDate: string("releaseDate"), originalAirdate: string("originalAirdate"),
                  images: CastImage.parsedList(o["images"], doubt))
    }
}

extension CastImage {
    /// `images`: objects, or plain URL strings as some receiver apps send them (a Pandora status
    /// in the real-devices corpus); nil when absent or when any element is neither.
    static func parsedList(_ value: JSONValue?, _ doubt: ParseDoubt) -> [CastImage]? {
        guard case .array(let items)? = value else { return nil }
        var out: [CastImage] = []
        out.reserveCapacity(items.count)
        for item in items {
            switch item {
            case .string(let url): out.append(CastImage(url: url))
            case .object(let fields):
                guard let image = CastImage(parsed: fields, doubt) else { return nil }
                out.append(image)
            default: return nil
            }
        }
        return out
    }

    init?(parsed o: [String: JSONValue], _ doubt: ParseDoubt) {
        guard case .value(let url) = o["url"].strictString(), let width = take(o["width"].strictInt(doubt)),
              let height = take(o["height"].strictInt(doubt)) else { return nil }
        self.init(url: url, width: width, height: height)
    }
}

extension QueueItem {
    init?(parsed o: [String: JSONValue], _ doubt: ParseDoubt) {
        guard let itemId = take(o["itemId"].strictInt(doubt)), let media = take(o["media"].strictMedia(doubt)),
              let autoplay = take(o["autoplay"].strictBool()), let startTime = take(o["startTime"].strictDouble()),
              let playbackDuration = take(o["playbackDuration"].strictDouble()),
              let preloadTime = take(o["preloadTime"].strictDouble()),
              let activeTrackIds = take(o["activeTrackIds"].strictInts(doubt)) else { return nil }
        self.init(itemId: itemId, media: media, autoplay: autoplay, startTime: startTime, playbackDuration: playbackDuration,
                  preloadTime: preloadTime, activeTrackIds: activeTrackIds, customData: o["customData"].anyJSON)
    }
}

extension StreamVolume {
    init?(parsed o: [String: JSONValue]) {
        guard let level = take(o["level"].strictDouble()), let muted = take(o["muted"].strictBool()) else { return nil }
        self.init(level: level, muted: muted)
    }
}

extension BreakStatus {
    init?(parsed o: [String: JSONValue]) {
        guard let breakId = take(o["breakId"].strictString()), let breakClipId = take(o["breakClipId"].strictString()),
              let currentBreakTime = take(o["currentBreakTime"].strictDouble()),
              let currentBreakClipTime = take(o["currentBreakClipTime"].strictDouble()),
              let whenSkippable = take(o["whenSkippable"].strictDouble()) else { return nil }
        self.init(breakId: breakId, breakClipId: breakClipId, currentBreakTime: currentBreakTime,
                  currentBreakClipTime: currentBreakClipTime, whenSkippable: whenSkippable)
    }
}

extension VideoInfo {
    init?(parsed o: [String: JSONValue], _ doubt: ParseDoubt) {
        guard let width = take(o["width"].strictInt(doubt)), let height = take(o["height"].strictInt(doubt)),
              let hdrType = take(o["hdrType"].strictString()) else { return nil }
        self.init(width: width, height: height, hdrType: hdrType)
    }
}
