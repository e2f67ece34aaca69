import CastProtocol

/// Builds LOAD / QUEUE_LOAD requests from the `load` command's JSON form.
enum MediaBuilder {
    static let loadKeys: Set<String> = ["url", "content_type", "stream_type", "title", "subtitle", "artist", "album",
                                        "images", "metadata_type", "autoplay", "position", "rate", "custom_data",
                                        "app_id", "queue", "repeat", "breaks", "break_clips"]
    static let itemKeys: Set<String> = ["url", "content_type", "stream_type", "title", "subtitle", "artist", "album",
                                        "images", "metadata_type", "custom_data"]
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
        let repeatMode: String
        switch try f.string("repeat")?.lowercased() {
        case nil, "off": repeatMode = "REPEAT_OFF"
        case "all": repeatMode = "REPEAT_ALL"
        case "one", "single": repeatMode = "REPEAT_SINGLE"
        case "all_and_shuffle", "shuffle": repeatMode = "REPEAT_ALL_AND_SHUFFLE"
        default: throw BridgeError.invalid("\"repeat\" must be off, all, one or all_and_shuffle")
        }
        let breaks = try jsonArray(f, "breaks"), breakClips = try jsonArray(f, "break_clips")

        if let rawQueue = f.dict["queue"], !rawQueue.isNull {
            guard f.dict["url"] == nil || f.dict["url"]?.isNull == true else {
                throw BridgeError.invalid("give either \"url\" or \"queue\", not both")
            }
            guard let list = rawQueue.arrayValue, !list.isEmpty, list.count <= maxQueueItems else {
                throw BridgeError.invalid("\"queue\" must be a list of 1-\(maxQueueItems) items like {\"url\": ..., \"title\": ...}")
            }
            var items: [QueueItem] = []
            for (n, entry) in list.enumerated() {
                guard case .object(let dict) = entry else { throw BridgeError.invalid("queue item \(n) must be an object with \"url\"") }
                let itemFields = Fields(body: .json(dict), command: "queue item \(n)")
                try itemFields.allow(itemKeys)
                items.append(QueueItem(media: try media(itemFields), autoplay: true))
            }
            let queue = QueueLoadRequest(items: items, startIndex: 0, repeatMode: repeatMode, currentTime: position,
                                         customData: f.dict["custom_data"].flatMap { $0.isNull ? nil : $0 })
            return LoadCommand(appId: appId, load: nil, queue: queue)
        }
        var info = try media(f)
        info.breaks = breaks
        info.breakClips = breakClips
        var request = LoadRequest(media: info, autoplay: autoplay, currentTime: position, playbackRate: rate)
        if repeatMode != "REPEAT_OFF" { request.queueData = .object(["repeatMode": .string(repeatMode)]) }
        return LoadCommand(appId: appId, load: request, queue: nil)
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
