import CastProtocol

/// The values of `tracks` and `queue`, and the track keys of `load`, range-checked. Whether an
/// id or a language exists is the planner's question (the media may change before the command's
/// turn); here only the shape is.
extension CommandParser {
    static let maxTrackIds = 64
    static let queueKeys: Set<String> = ["insert", "before", "remove", "reorder", "jump", "jump_by", "repeat", "shuffle"]
    static let queueOperations = ["insert", "remove", "reorder", "jump", "jump_by", "repeat", "shuffle"]

    func parseTracks(_ f: Fields) throws -> TracksCommand {
        switch f.body {
        case .short(let text):
            if text.lowercased() == "off" { return TracksCommand(subtitles: .off) }
            guard Self.isLanguageTag(text) else {
                throw BridgeError.invalid("tracks takes off (subtitles off) or a language such as en (subtitles in English); "
                                          + "or {\"audio\": \"de\"}, {\"active\": [2]}, {\"text_style\": {...}}")
            }
            return TracksCommand(subtitles: .language(text))
        case .json:
            try f.allow(["active", "subtitles", "audio", "text_style"])
            var command = TracksCommand()
            if let raw = f.dict["active"], !raw.isNull {
                command.active = try Self.itemIds(raw, key: "active", allowEmpty: true, limit: Self.maxTrackIds)
            }
            if let subtitles = try f.string("subtitles") {
                if subtitles.lowercased() == "off" {
                    command.subtitles = .off
                } else {
                    guard Self.isLanguageTag(subtitles) else {
                        throw BridgeError.invalid("\"subtitles\" is \"off\" or a language such as \"en\" or \"pt-BR\"")
                    }
                    command.subtitles = .language(subtitles)
                }
            }
            if let audio = try f.string("audio") {
                guard Self.isLanguageTag(audio) else { throw BridgeError.invalid("\"audio\" is a language such as \"de\" or \"en-US\"") }
                command.audio = audio
            }
            if let raw = f.dict["text_style"], !raw.isNull { command.textStyle = try Self.textStyle(raw) }
            if command.active != nil, command.subtitles != nil || command.audio != nil {
                throw BridgeError.invalid("give either \"active\" (every active track id) or \"subtitles\"/\"audio\", not both")
            }
            guard command.selectsTracks || command.textStyle != nil else {
                throw BridgeError.invalid("tracks needs \"active\", \"subtitles\", \"audio\" or \"text_style\"")
            }
            return command
        }
    }

    func parseQueue(_ f: Fields) throws -> QueueCommand {
        guard case .json = f.body else {
            throw BridgeError.invalid("queue takes a JSON object: {\"insert\": [{\"url\": ...}]}, {\"remove\": [2]}, "
                                      + "{\"reorder\": [3], \"before\": 1}, {\"jump\": 2}, {\"jump_by\": 1}, {\"repeat\": \"all\"} or {\"shuffle\": true}")
        }
        try f.allow(Self.queueKeys)
        let given = Self.queueOperations.filter { key in f.dict[key].map { !$0.isNull } ?? false }
        guard given.count == 1, let operation = given.first else {
            throw BridgeError.invalid("queue takes exactly one of " + Self.queueOperations.map { "\"\($0)\"" }.joined(separator: ", "))
        }
        let before = f.dict["before"].flatMap { $0.isNull ? nil : $0 }
        if before != nil, operation != "insert", operation != "reorder" {
            throw BridgeError.invalid("\"before\" goes with \"insert\" or \"reorder\"")
        }
        switch operation {
        case "insert":
            guard let list = f.dict["insert"]?.arrayValue, !list.isEmpty, list.count <= MediaBuilder.maxQueueItems else {
                throw BridgeError.invalid("\"insert\" is a list of 1-\(MediaBuilder.maxQueueItems) items like {\"url\": ..., \"title\": ...}")
            }
            let items = try list.enumerated().map { try MediaBuilder.queueItem($1, index: $0) }
            var position = QueueCommand.Position.end
            switch before {
            case nil: break
            case .string("next")?: position = .next
            case let value?:
                guard let id = Self.itemId(value) else {
                    throw BridgeError.invalid("\"before\" is an item id (see media.queue.items) or \"next\" (after the current item)")
                }
                position = .before(id)
            }
            let command = QueueCommand.insert(items, at: position)
            try checkCastSize(.string(MediaRequest.queueInsert(QueueInsertRequest(mediaSessionId: 1, items: items, insertBefore: 1))
                .json(requestId: 1)), namespace: CastNamespace.media)
            return command
        case "remove":
            return .remove(try Self.itemIds(f.dict["remove"] ?? .null, key: "remove", allowEmpty: false, limit: MediaBuilder.maxQueueItems))
        case "reorder":
            let ids = try Self.itemIds(f.dict["reorder"] ?? .null, key: "reorder", allowEmpty: false, limit: MediaBuilder.maxQueueItems)
            guard Set(ids).count == ids.count else { throw BridgeError.invalid("\"reorder\" lists an item id twice") }
            var target: Int?
            if let before {
                guard let id = Self.itemId(before) else { throw BridgeError.invalid("\"before\" is an item id (see media.queue.items)") }
                guard !ids.contains(id) else { throw BridgeError.invalid("\"before\" cannot be one of the items that move") }
                target = id
            }
            return .reorder(ids, before: target)
        case "jump":
            guard let id = f.dict["jump"].flatMap({ Self.itemId($0) }) else {
                throw BridgeError.invalid("\"jump\" is the item id to play (see media.queue.items); \"jump_by\" moves by an offset")
            }
            return .jump(itemId: id)
        case "jump_by":
            guard let n = f.dict["jump_by"].flatMap(Self.signedId), n != 0, abs(n) <= 1000 else {
                throw BridgeError.invalid("\"jump_by\" is a whole number of items, -1000 to 1000 and not 0 (1: the next item)")
            }
            return .jumpBy(n)
        case "repeat":
            return .repeatMode(try MediaBuilder.repeatMode(try f.string("repeat")))
        default:
            guard try f.bool("shuffle") == true else {
                throw BridgeError.invalid("\"shuffle\" takes true (the queue in a new order, once); Cast cannot unshuffle: "
                                          + "{\"repeat\": \"all\"} ends all_and_shuffle")
            }
            return .shuffle
        }
    }

    /// A BCP-47 language tag as far as a command needs: letters, digits and `-`, starting with
    /// 2-8 letters, at most 35 bytes (`en`, `pt-BR`, `zh-Hant-TW`).
    static func isLanguageTag(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 35 else { return false }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...8).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            return false
        }
        return parts.dropFirst().allSatisfy { part in
            (1...8).contains(part.count) && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }

    /// A positive whole number (an item or track id).
    static func itemId(_ value: JSONValue) -> Int? {
        guard let n = value.doubleValue, n.isFinite, n >= 0, n <= 2_147_483_647, n == n.rounded() else { return nil }
        return Int(n)
    }

    static func signedId(_ value: JSONValue) -> Int? {
        guard let n = value.doubleValue, n.isFinite, abs(n) <= 2_147_483_647, n == n.rounded() else { return nil }
        return Int(n)
    }

    static func itemIds(_ raw: JSONValue, key: String, allowEmpty: Bool, limit: Int) throws -> [Int] {
        guard let list = raw.arrayValue, allowEmpty || !list.isEmpty, list.count <= limit else {
            throw BridgeError.invalid("\"\(key)\" is a list of \(allowEmpty ? "up to" : "1 to") \(limit) ids")
        }
        return try list.map { value in
            guard let id = itemId(value) else { throw BridgeError.invalid("\"\(key)\" holds whole numbers (ids), got \(JSONOutput.text(value).prefix(32))") }
            return id
        }
    }

    // MARK: - Text track style

    static let edgeTypes = ["none", "outline", "drop_shadow", "raised", "depressed"]

    /// `text_style` into a Cast `TextTrackStyle`: `font_scale` (0.1-10), colours as `#RRGGBB` or
    /// `#RRGGBBAA` (sent as `#RRGGBBAA`), `edge_type`, `font_family`.
    static func textStyle(_ raw: JSONValue) throws -> JSONValue {
        guard case .object(let dict) = raw else {
            throw BridgeError.invalid("\"text_style\" is an object like {\"font_scale\": 1.2, \"foreground_color\": \"#FFFF00\"}")
        }
        let f = Fields(body: .json(dict), command: "text_style")
        try f.allow(["font_scale", "foreground_color", "background_color", "edge_type", "edge_color", "font_family"])
        var style: [String: JSONValue] = [:]
        if let scale = try f.number("font_scale") {
            guard (0.1...10).contains(scale) else { throw BridgeError.invalid("\"font_scale\" must be 0.1-10 (1 is normal)") }
            style["fontScale"] = .number(scale)
        }
        for (key, cast) in [("foreground_color", "foregroundColor"), ("background_color", "backgroundColor"), ("edge_color", "edgeColor")] {
            guard let text = try f.string(key) else { continue }
            guard let colour = color(text) else { throw BridgeError.invalid("\"\(key)\" is a colour like #FFFFFF or #000000C0") }
            style[cast] = .string(colour)
        }
        if let edge = try f.string("edge_type") {
            guard edgeTypes.contains(edge.lowercased()) else {
                throw BridgeError.invalid("\"edge_type\" must be one of " + edgeTypes.joined(separator: ", "))
            }
            style["edgeType"] = .string(edge.uppercased())
        }
        if let family = try f.string("font_family") {
            guard !family.isEmpty, family.utf8.count <= 256 else { throw BridgeError.invalid("\"font_family\" is 1-256 bytes") }
            style["fontFamily"] = .string(family)
        }
        guard !style.isEmpty else { throw BridgeError.invalid("\"text_style\" needs at least one key") }
        return .object(style)
    }

    /// `#RRGGBB` or `#RRGGBBAA` as `#RRGGBBAA` (upper case); nil for anything else.
    static func color(_ text: String) -> String? {
        guard text.hasPrefix("#"), text.count == 7 || text.count == 9,
              text.dropFirst().allSatisfy({ $0.isHexDigit && $0.isASCII }) else { return nil }
        return (text.count == 7 ? text + "FF" : text).uppercased()
    }
}
