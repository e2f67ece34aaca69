import CastProtocol

/// Builds LOAD / QUEUE_LOAD requests from the `load` command's JSON form.
enum MediaBuilder {
    static let loadKeys: Set<String> = ["url", "content_type", "stream_type", "title", "subtitle", "artist", "album",
                                        "images", "metadata_type", "autoplay", "position", "rate", "custom_data",
                                        "app_id", "queue", "repeat", "breaks", "break_clips", "tracks", "active_tracks",
                                        "text_style"]
    static let itemKeys: Set<String> = ["url", "content_type", "stream_type", "title", "subtitle", "artist", "album",
                                        "images", "metadata_type", "custom_data", "autoplay", "preload_time", "start_time"]
    static let maxQueueItems = 200

    /// A URL or content id: 1-4096 bytes, no spaces or control characters.
    static func checkURL(_ url: String, key: String) throws {
        guard !url.isEmpty else { throw BridgeError.invalid("\(key) needs a URL, e.g. http://192.0.2.5/song.mp3") }
        guard url.utf8.count <= 4096, !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw BridgeError.invalid("the URL must be at most 4096 bytes without spaces or control characters")
        }
    }

    /// `content_type` from the URL's extension (query and fragment ignored); `video/mp4` when unknown.
    static func guessContentType(_ url: String) -> String {
        var path = Substring(url)
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<cut] }
        let last = path.split(separator: "/").last ?? ""
        guard let dot = last.lastIndex(of: ".") else { return "video/mp4" }
        let ext = last[last.index(after: dot)...].lowercased()
        let table: [String: String] = [
            "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "ogg": "audio/ogg", "oga": "audio/ogg",
            "opus": "audio/ogg", "flac": "audio/flac", "wav": "audio/wav", "weba": "audio/webm",
            "mp4": "video/mp4", "m4v": "video/mp4", "webm": "video/webm", "mkv": "video/x-matroska",
            "m3u8": "application/x-mpegURL", "mpd": "application/dash+xml", "ism": "application/vnd.ms-sstr+xml",
            "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
        ]
        return table[ext] ?? "video/mp4"
    }

    static func streamType(_ f: Fields) throws -> String {
        switch try f.string("stream_type")?.lowercased() {
        case nil, "buffered": return "BUFFERED"
        case "live": return "LIVE"
        case "none": return "NONE"
        default: throw BridgeError.invalid("\"stream_type\" must be buffered, live or none")
        }
    }

    static func images(_ f: Fields) throws -> [CastImage]? {
        guard let raw = f.dict["images"], !raw.isNull else { return nil }
        guard let list = raw.arrayValue, list.count <= 32 else {
            throw BridgeError.invalid("\"images\" must be a list of up to 32 URLs")
        }
        return try list.map { item in
            if let url = item.stringValue {
                try checkURL(url, key: "images")
                return CastImage(url: url)
            }
            if let url = item["url"]?.stringValue {
                try checkURL(url, key: "images")
                return CastImage(url: url, width: item["width"]?.intValue, height: item["height"]?.intValue)
            }
            throw BridgeError.invalid("\"images\" entries are URLs (or {\"url\", \"width\", \"height\"})")
        }
    }

    /// MediaInformation from the media keys of a load command or a queue item.
    static func media(_ f: Fields) throws -> MediaInformation {
        guard let url = try f.string("url") else { throw BridgeError.invalid("load needs \"url\" (or \"queue\")") }
        try checkURL(url, key: "url")
        let contentType = try f.string("content_type") ?? guessContentType(url)
        var metadataType: Int
        if let name = try f.string("metadata_type") {
            guard let t = MetadataType(name: name) else {
                throw BridgeError.invalid("\"metadata_type\" must be one of " + MetadataType.allCases.map(\.name).joined(separator: ", "))
            }
            metadataType = t.rawValue
        } else {
            metadataType = (try f.string("artist") != nil || (try f.string("album")) != nil) ? MetadataType.musicTrack.rawValue : 0
        }
        let metadata = MediaMetadata(metadataType: metadataType, title: try f.string("title"), subtitle: try f.string("subtitle"),
                                     artist: try f.string("artist"), albumName: try f.string("album"), images: try images(f))
        var info = MediaInformation(contentId: url, streamType: try streamType(f), contentType: contentType, metadata: metadata)
        if let custom = f.dict["custom_data"], !custom.isNull { info.customData = custom }
        return info
    }

    static func load(_ f: Fields) throws -> LoadCommand {
        try f.allow(loadKeys)
        let appId = try f.string("app_id") ?? CastAppID.defaultMediaReceiver
        try CommandParser.checkAppId(appId)
        let autoplay = try f.bool("autoplay") ?? true
        let position = try f.number("position")
        if let position, position < 0 || position > 10_000_000 { throw BridgeError.invalid("\"position\" must be 0 or more seconds") }
        let rate = try f.number("rate")
        if let rate, !(0.5...2.0).contains(rate) { throw BridgeError.invalid("\"rate\" must be from 0.5 to 2.0") }
        let repeatMode = try repeatMode(try f.string("repeat"))
        let breaks = try jsonArray(f, "breaks"), breakClips = try jsonArray(f, "break_clips")

        if let rawQueue = f.dict["queue"], !rawQueue.isNull {
            guard f.dict["url"] == nil || f.dict["url"]?.isNull == true else {
                throw BridgeError.invalid("give either \"url\" or \"queue\", not both")
            }
            guard let list = rawQueue.arrayValue, !list.isEmpty, list.count <= maxQueueItems else {
                throw BridgeError.invalid("\"queue\" must be a list of 1-\(maxQueueItems) items like {\"url\": ..., \"title\": ...}")
            }
            for key in ["tracks", "active_tracks", "text_style"] where f.dict[key].map({ !$0.isNull }) ?? false {
                throw BridgeError.invalid("\"\(key)\" goes with \"url\" (one media item), not with \"queue\"")
            }
            let items = try list.enumerated().map { try queueItem($1, index: $0) }
            let queue = QueueLoadRequest(items: items, startIndex: 0, repeatMode: repeatMode, currentTime: position,
                                         customData: f.dict["custom_data"].flatMap { $0.isNull ? nil : $0 })
            return LoadCommand(appId: appId, load: nil, queue: queue)
        }
        var info = try media(f)
        info.breaks = breaks
        info.breakClips = breakClips
        let trackList = try tracks(f)
        if !trackList.isEmpty { info.tracks = .array(trackList.map(\.json)) }
        if let raw = f.dict["text_style"], !raw.isNull { info.textTrackStyle = try CommandParser.textStyle(raw) }
        var active: [Int]?
        if let raw = f.dict["active_tracks"], !raw.isNull {
            let ids = try CommandParser.itemIds(raw, key: "active_tracks", allowEmpty: true, limit: CommandParser.maxTrackIds)
            if let unknown = ids.first(where: { id in !trackList.contains { $0.trackId == id } }) {
                throw BridgeError.invalid("\"active_tracks\" names track \(unknown), which \"tracks\" does not list")
            }
            active = ids
        }
        var request = LoadRequest(media: info, autoplay: autoplay, currentTime: position, playbackRate: rate, activeTrackIds: active)
        if repeatMode != "REPEAT_OFF" { request.queueData = .object(["repeatMode": .string(repeatMode)]) }
        return LoadCommand(appId: appId, load: request, queue: nil)
    }

    /// `repeat`: `off` (default), `all`, `one`, `all_and_shuffle` as the Cast repeat mode.
    static func repeatMode(_ word: String?) throws -> String {
        switch word?.lowercased() {
        case nil, "off": return "REPEAT_OFF"
        case "all": return "REPEAT_ALL"
        case "one", "single": return "REPEAT_SINGLE"
        case "all_and_shuffle", "shuffle": return "REPEAT_ALL_AND_SHUFFLE"
        default: throw BridgeError.invalid("\"repeat\" must be off, all, one or all_and_shuffle")
        }
    }

    /// One item of `load`'s `queue` or of `queue`'s `insert`: the media keys, plus `autoplay`
    /// (default true), `preload_time` and `start_time` (seconds).
    static func queueItem(_ entry: JSONValue, index n: Int) throws -> QueueItem {
        guard case .object(let dict) = entry else { throw BridgeError.invalid("queue item \(n) must be an object with \"url\"") }
        let f = Fields(body: .json(dict), command: "queue item \(n)")
        try f.allow(itemKeys)
        var item = QueueItem(media: try media(f), autoplay: try f.bool("autoplay") ?? true)
        for (key, path) in [("preload_time", \QueueItem.preloadTime), ("start_time", \QueueItem.startTime)] {
            guard let value = try f.number(key) else { continue }
            guard value >= 0, value <= 10_000_000 else { throw BridgeError.invalid("\"\(key)\" must be 0 or more seconds") }
            item[keyPath: path] = value
        }
        return item
    }

    static let trackTypes = ["text", "audio", "video"]
    static let trackSubtypes = ["subtitles", "captions", "descriptions", "chapters", "metadata"]

    /// `load`'s `tracks`: `[{"id", "type", "subtype", "language", "name", "content_id", "content_type"}]`.
    static func tracks(_ f: Fields) throws -> [MediaTrack] {
        guard let raw = f.dict["tracks"], !raw.isNull else { return [] }
        guard let list = raw.arrayValue, list.count <= CommandParser.maxTrackIds else {
            throw BridgeError.invalid("\"tracks\" is a list of up to \(CommandParser.maxTrackIds) tracks like "
                                      + "{\"id\": 1, \"type\": \"text\", \"language\": \"en\", \"content_id\": \"http://.../en.vtt\"}")
        }
        var out: [MediaTrack] = []
        for (n, entry) in list.enumerated() {
            guard case .object(let dict) = entry else { throw BridgeError.invalid("track \(n) must be an object") }
            let t = Fields(body: .json(dict), command: "track \(n)")
            try t.allow(["id", "type", "subtype", "language", "name", "content_id", "content_type"])
            guard let id = dict["id"].flatMap({ CommandParser.itemId($0) }), !out.contains(where: { $0.trackId == id }) else {
                throw BridgeError.invalid("track \(n) needs an \"id\": a whole number, different for every track")
            }
            guard let type = try t.string("type")?.lowercased(), trackTypes.contains(type) else {
                throw BridgeError.invalid("track \(n) needs \"type\": text, audio or video")
            }
            let subtype = try t.string("subtype")?.lowercased()
            if let subtype, type != "text" || !trackSubtypes.contains(subtype) {
                throw BridgeError.invalid("\"subtype\" is for text tracks: " + trackSubtypes.joined(separator: ", "))
            }
            let language = try t.string("language")
            if let language, !CommandParser.isLanguageTag(language) {
                throw BridgeError.invalid("track \(n): \"language\" is a BCP-47 tag such as en or pt-BR")
            }
            let contentId = try t.string("content_id")
            if let contentId { try checkURL(contentId, key: "content_id") }
            if type == "text", contentId == nil {
                throw BridgeError.invalid("text track \(n) needs \"content_id\": the URL of its WebVTT file")
            }
            out.append(MediaTrack(trackId: id, type: type.uppercased(), subtype: subtype?.uppercased() ?? (type == "text" ? "SUBTITLES" : nil),
                                  language: language, name: try t.string("name"), trackContentId: contentId,
                                  trackContentType: try t.string("content_type") ?? (type == "text" ? "text/vtt" : nil)))
        }
        return out
    }

    /// `breaks` / `break_clips`: arrays of objects, snake_case keys turned into the Cast camelCase shape.
    static func jsonArray(_ f: Fields, _ key: String) throws -> JSONValue? {
        guard let raw = f.dict[key], !raw.isNull else { return nil }
        guard let list = raw.arrayValue, list.allSatisfy({ $0.objectValue != nil }) else {
            throw BridgeError.invalid("\"\(key)\" must be a list of objects")
        }
        return raw.camelCased()
    }
}
