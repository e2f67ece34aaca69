/// QUEUE_INSERT request body: `items` (without item ids) go before `insertBefore`, or at the end
/// of the queue when it is nil. `currentItemIndex` (an index into `items`) plays that item at once;
/// without it, what plays is not interrupted.
public struct QueueInsertRequest: Sendable, Hashable {
    public var mediaSessionId: Int
    public var items: [QueueItem]
    public var insertBefore: Int?
    public var currentItemIndex: Int?

    public init(mediaSessionId: Int, items: [QueueItem], insertBefore: Int? = nil, currentItemIndex: Int? = nil) {
        self.mediaSessionId = mediaSessionId
        self.items = items
        self.insertBefore = insertBefore
        self.currentItemIndex = currentItemIndex
    }
}

/// QUEUE_UPDATE request body: a jump (to an item id, or by an offset), a repeat mode, a shuffle.
public struct QueueUpdateRequest: Sendable, Hashable {
    public var mediaSessionId: Int
    public var currentItemId: Int?
    public var jump: Int?
    /// `REPEAT_OFF`, `REPEAT_ALL`, `REPEAT_SINGLE`, `REPEAT_ALL_AND_SHUFFLE`.
    public var repeatMode: String?
    public var shuffle: Bool?

    public init(mediaSessionId: Int, currentItemId: Int? = nil, jump: Int? = nil, repeatMode: String? = nil,
                shuffle: Bool? = nil) {
        self.mediaSessionId = mediaSessionId
        self.currentItemId = currentItemId
        self.jump = jump
        self.repeatMode = repeatMode
        self.shuffle = shuffle
    }
}

/// EDIT_TRACKS_INFO request body: the active tracks (an empty list turns every track off) and/or
/// the text track style.
public struct EditTracksRequest: Sendable, Hashable {
    public var mediaSessionId: Int
    public var activeTrackIds: [Int]?
    /// A `TextTrackStyle` object (camelCase keys).
    public var textTrackStyle: JSONValue?

    public init(mediaSessionId: Int, activeTrackIds: [Int]? = nil, textTrackStyle: JSONValue? = nil) {
        self.mediaSessionId = mediaSessionId
        self.activeTrackIds = activeTrackIds
        self.textTrackStyle = textTrackStyle
    }
}

/// QUEUE_CHANGE: the receiver's notice that its queue changed (`changeType` `INSERT`, `REMOVE`,
/// `ITEMS_CHANGE`, `UPDATE`, `NO_CHANGE`). For a reorder it is `UPDATE` with the whole queue's
/// ids in `itemIds`.
public struct QueueChange: Codable, Sendable, Hashable {
    public var changeType: String?
    public var itemIds: [Int]?
    public var insertBefore: Int?
    public var reorderItemIds: [Int]?
    public var sequenceNumber: Int?

    public init(changeType: String?, itemIds: [Int]? = nil, insertBefore: Int? = nil, reorderItemIds: [Int]? = nil,
                sequenceNumber: Int? = nil) {
        self.changeType = changeType
        self.itemIds = itemIds
        self.insertBefore = insertBefore
        self.reorderItemIds = reorderItemIds
        self.sequenceNumber = sequenceNumber
    }

    enum CodingKeys: String, CodingKey { case changeType, itemIds, insertBefore, reorderItemIds, sequenceNumber }

    /// Lenient: a field of the wrong type is absent.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        changeType = (try? c.decodeIfPresent(String.self, forKey: .changeType)) ?? nil
        itemIds = (try? c.decodeIfPresent([Int].self, forKey: .itemIds)) ?? nil
        insertBefore = (try? c.decodeIfPresent(Int.self, forKey: .insertBefore)) ?? nil
        reorderItemIds = (try? c.decodeIfPresent([Int].self, forKey: .reorderItemIds)) ?? nil
        sequenceNumber = (try? c.decodeIfPresent(Int.self, forKey: .sequenceNumber)) ?? nil
    }
}

/// One media track (`MediaInformation.tracks[]`), read from the JSON the receiver sent.
public struct MediaTrack: Sendable, Hashable {
    public var trackId: Int
    /// `TEXT`, `AUDIO` or `VIDEO`.
    public var type: String
    /// `SUBTITLES`, `CAPTIONS`, `DESCRIPTIONS`, `CHAPTERS`, `METADATA` (text tracks).
    public var subtype: String?
    /// A BCP-47 language tag (`en`, `de-CH`).
    public var language: String?
    public var name: String?
    public var trackContentId: String?
    public var trackContentType: String?

    public init(trackId: Int, type: String, subtype: String? = nil, language: String? = nil, name: String? = nil,
                trackContentId: String? = nil, trackContentType: String? = nil) {
        self.trackId = trackId
        self.type = type
        self.subtype = subtype
        self.language = language
        self.name = name
        self.trackContentId = trackContentId
        self.trackContentType = trackContentType
    }

    /// At most this many tracks are read from one media item.
    public static let maxTracks = 64

    /// A track from its JSON; nil without an integer `trackId` and a string `type`.
    public init?(json: JSONValue) {
        guard let id = json["trackId"]?.intValue, let type = json["type"]?.stringValue, type.utf8.count <= 32 else {
            return nil
        }
        func text(_ key: String) -> String? { json[key]?.stringValue.map { String($0.prefix(1024)) } }
        self.init(trackId: id, type: type.uppercased(), subtype: text("subtype")?.uppercased(), language: text("language"),
                  name: text("name"), trackContentId: text("trackContentId"), trackContentType: text("trackContentType"))
    }

    /// The track as Cast JSON.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["trackId": .number(Double(trackId)), "type": .string(type)]
        if let subtype { o["subtype"] = .string(subtype) }
        if let language { o["language"] = .string(language) }
        if let name { o["name"] = .string(name) }
        if let trackContentId { o["trackContentId"] = .string(trackContentId) }
        if let trackContentType { o["trackContentType"] = .string(trackContentType) }
        return .object(o)
    }

    /// True when this track's language is `tag` or a more specific form of it (`en` matches
    /// `en-US`; case-insensitive), as BCP-47 prefix matching does.
    public func matches(language tag: String) -> Bool {
        guard let language = language?.lowercased() else { return false }
        let wanted = tag.lowercased()
        return language == wanted || language.hasPrefix(wanted + "-")
    }
}

extension MediaInformation {
    /// The tracks that parse (at most `MediaTrack.maxTracks`), in the receiver's order.
    public var trackList: [MediaTrack] {
        guard let list = tracks?.arrayValue else { return [] }
        return list.prefix(MediaTrack.maxTracks).compactMap(MediaTrack.init(json:))
    }
}
