/// An image reference in media metadata.
public struct CastImage: Codable, Sendable, Hashable {
    public var url: String
    public var width: Int?
    public var height: Int?

    public init(url: String, width: Int? = nil, height: Int? = nil) {
        self.url = url
        self.width = width
        self.height = height
    }
}

extension CastImage {
    /// An element of `images`: an image object, or a plain URL string (as some receiver apps
    /// send them).
    struct OrURL: Decodable {
        var image: CastImage
        init(from decoder: any Decoder) throws {
            if let url = try? decoder.singleValueContainer().decode(String.self) {
                image = CastImage(url: url)
            } else {
                image = try CastImage(from: decoder)
            }
        }
    }
}

/// `metadataType` values.
public enum MetadataType: Int, Sendable, Hashable, CaseIterable {
    case generic = 0, movie = 1, tvShow = 2, musicTrack = 3, photo = 4, audiobookChapter = 5

    /// snake_case name used on MQTT.
    public var name: String {
        switch self {
        case .generic: return "generic"
        case .movie: return "movie"
        case .tvShow: return "tv_show"
        case .musicTrack: return "music_track"
        case .photo: return "photo"
        case .audiobookChapter: return "audiobook_chapter"
        }
    }

    public init?(name: String) {
        guard let match = MetadataType.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = match
    }
}

/// Media metadata: the union of the keys of every `metadataType`, all optional. Deprecated
/// aliases (`episodeNumber`, `seasonNumber`, `episodeTitle`, `artistName`, `songName`) are read
/// into the current keys.
public struct MediaMetadata: Codable, Sendable, Hashable {
    public var metadataType: Int?
    public var title: String?
    public var subtitle: String?
    public var artist: String?
    public var albumName: String?
    public var albumArtist: String?
    public var composer: String?
    public var seriesTitle: String?
    public var season: Int?
    public var episode: Int?
    public var trackNumber: Int?
    public var discNumber: Int?
    public var studio: String?
    public var releaseDate: String?
    public var originalAirdate: String?
    public var images: [CastImage]?

    public init(metadataType: Int? = nil, title: String? = nil, subtitle: String? = nil, artist: String? = nil,
                albumName: String? = nil, albumArtist: String? = nil, composer: String? = nil,
                seriesTitle: String? = nil, season: Int? = nil, episode: Int? = nil, trackNumber: Int? = nil,
                discNumber: Int? = nil, studio: String? = nil, releaseDate: String? = nil,
                originalAirdate: String? = nil, images: [CastImage]? = nil) {
        self.metadataType = metadataType
        self.title = title
        self.subtitle = subtitle
        self.artist = artist
        self.albumName = albumName
        self.albumArtist = albumArtist
        self.composer = composer
        self.seriesTitle = seriesTitle
        self.season = season
        self.episode = episode
        self.trackNumber = trackNumber
        self.discNumber = discNumber
        self.studio = studio
        self.releaseDate = releaseDate
        self.originalAirdate = originalAirdate
        self.images = images
    }

    enum CodingKeys: String, CodingKey {
        case metadataType, title, subtitle, artist, albumName, albumArtist, composer, seriesTitle, season,
             episode, trackNumber, discNumber, studio, releaseDate, originalAirdate, images
        case episodeNumber, seasonNumber, episodeTitle, artistName, songName
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func string(_ key: CodingKeys) -> String? { (try? c.decodeIfPresent(String.self, forKey: key)) ?? nil }
        func int(_ key: CodingKeys) -> Int? {
            if let i = (try? c.decodeIfPresent(Int.self, forKey: key)) ?? nil { return i }
            if let d = (try? c.decodeIfPresent(Double.self, forKey: key)) ?? nil { return Int(jsonNumber: d) }
            if let s = string(key) { return Int(s) }
            return nil
        }
        metadataType = int(.metadataType)
        title = string(.title) ?? string(.songName) ?? string(.episodeTitle)
        subtitle = string(.subtitle)
        artist = string(.artist) ?? string(.artistName)
        albumName = string(.albumName)
        albumArtist = string(.albumArtist)
        composer = string(.composer)
        seriesTitle = string(.seriesTitle)
        season = int(.season) ?? int(.seasonNumber)
        episode = int(.episode) ?? int(.episodeNumber)
        trackNumber = int(.trackNumber)
        discNumber = int(.discNumber)
        studio = string(.studio)
        releaseDate = string(.releaseDate)
        originalAirdate = string(.originalAirdate)
        images = ((try? c.decodeIfPresent([CastImage.OrURL].self, forKey: .images)) ?? nil)?.map(\.image)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(metadataType ?? 0, forKey: .metadataType)
        try c.encodeIfPresent(title, forKey: .title)
        try c.encodeIfPresent(subtitle, forKey: .subtitle)
        try c.encodeIfPresent(artist, forKey: .artist)
        try c.encodeIfPresent(albumName, forKey: .albumName)
        try c.encodeIfPresent(albumArtist, forKey: .albumArtist)
        try c.encodeIfPresent(composer, forKey: .composer)
        try c.encodeIfPresent(seriesTitle, forKey: .seriesTitle)
        try c.encodeIfPresent(season, forKey: .season)
        try c.encodeIfPresent(episode, forKey: .episode)
        try c.encodeIfPresent(trackNumber, forKey: .trackNumber)
        try c.encodeIfPresent(discNumber, forKey: .discNumber)
        try c.encodeIfPresent(studio, forKey: .studio)
        try c.encodeIfPresent(releaseDate, forKey: .releaseDate)
        try c.encodeIfPresent(originalAirdate, forKey: .originalAirdate)
        try c.encodeIfPresent(images, forKey: .images)
    }
}

/// MediaInformation: what is (or is to be) played.
public struct MediaInformation: Codable, Sendable, Hashable {
    public var contentId: String
    public var contentUrl: String?
    /// `BUFFERED`, `LIVE` or `NONE`.
    public var streamType: String?
    public var contentType: String?
    public var metadata: MediaMetadata?
    public var duration: Double?
    public var customData: JSONValue?
    public var tracks: JSONValue?
    public var textTrackStyle: JSONValue?
    public var breaks: JSONValue?
    public var breakClips: JSONValue?
    public var entity: String?
    public var hlsSegmentFormat: String?

    public init(contentId: String, contentUrl: String? = nil, streamType: String? = "BUFFERED",
                contentType: String? = nil, metadata: MediaMetadata? = nil, duration: Double? = nil,
                customData: JSONValue? = nil, tracks: JSONValue? = nil, textTrackStyle: JSONValue? = nil,
                breaks: JSONValue? = nil, breakClips: JSONValue? = nil, entity: String? = nil,
                hlsSegmentFormat: String? = nil) {
        self.contentId = contentId
        self.contentUrl = contentUrl
        self.streamType = streamType
        self.contentType = contentType
        self.metadata = metadata
        self.duration = duration
        self.customData = customData
        self.tracks = tracks
        self.textTrackStyle = textTrackStyle
        self.breaks = breaks
        self.breakClips = breakClips
        self.entity = entity
        self.hlsSegmentFormat = hlsSegmentFormat
    }

    enum CodingKeys: String, CodingKey {
        case contentId, contentUrl, streamType, contentType, metadata, duration, customData, tracks,
             textTrackStyle, breaks, breakClips, entity, hlsSegmentFormat
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        contentId = (try? c.decodeIfPresent(String.self, forKey: .contentId)) ?? nil ?? ""
        contentUrl = (try? c.decodeIfPresent(String.self, forKey: .contentUrl)) ?? nil
        streamType = (try? c.decodeIfPresent(String.self, forKey: .streamType)) ?? nil
        contentType = (try? c.decodeIfPresent(String.self, forKey: .contentType)) ?? nil
        metadata = (try? c.decodeIfPresent(MediaMetadata.self, forKey: .metadata)) ?? nil
        duration = (try? c.decodeIfPresent(Double.self, forKey: .duration)) ?? nil
        customData = (try? c.decodeIfPresent(JSONValue.self, forKey: .customData)) ?? nil
        tracks = (try? c.decodeIfPresent(JSONValue.self, forKey: .tracks)) ?? nil
        textTrackStyle = (try? c.decodeIfPresent(JSONValue.self, forKey: .textTrackStyle)) ?? nil
        breaks = (try? c.decodeIfPresent(JSONValue.self, forKey: .breaks)) ?? nil
        breakClips = (try? c.decodeIfPresent(JSONValue.self, forKey: .breakClips)) ?? nil
        entity = (try? c.decodeIfPresent(String.self, forKey: .entity)) ?? nil
        hlsSegmentFormat = (try? c.decodeIfPresent(String.self, forKey: .hlsSegmentFormat)) ?? nil
    }
}

/// A queue item (itemId is assigned by the receiver; omit it when loading).
public struct QueueItem: Codable, Sendable, Hashable {
    public var itemId: Int?
    public var media: MediaInformation?
    public var autoplay: Bool?
    public var startTime: Double?
    public var playbackDuration: Double?
    public var preloadTime: Double?
    public var activeTrackIds: [Int]?
    public var customData: JSONValue?

    public init(itemId: Int? = nil, media: MediaInformation?, autoplay: Bool? = true, startTime: Double? = nil,
                playbackDuration: Double? = nil, preloadTime: Double? = nil, activeTrackIds: [Int]? = nil,
                customData: JSONValue? = nil) {
        self.itemId = itemId
        self.media = media
        self.autoplay = autoplay
        self.startTime = startTime
        self.playbackDuration = playbackDuration
        self.preloadTime = preloadTime
        self.activeTrackIds = activeTrackIds
        self.customData = customData
    }
}

/// A running ad break.
public struct BreakStatus: Codable, Sendable, Hashable {
    public var breakId: String?
    public var breakClipId: String?
    public var currentBreakTime: Double?
    public var currentBreakClipTime: Double?
    public var whenSkippable: Double?

    public init(breakId: String? = nil, breakClipId: String? = nil, currentBreakTime: Double? = nil,
                currentBreakClipTime: Double? = nil, whenSkippable: Double? = nil) {
        self.breakId = breakId
        self.breakClipId = breakClipId
        self.currentBreakTime = currentBreakTime
        self.currentBreakClipTime = currentBreakClipTime
        self.whenSkippable = whenSkippable
    }
}

/// Video properties of the current media.
public struct VideoInfo: Codable, Sendable, Hashable {
    public var width: Int?
    public var height: Int?
    public var hdrType: String?

    public init(width: Int? = nil, height: Int? = nil, hdrType: String? = nil) {
        self.width = width
        self.height = height
        self.hdrType = hdrType
    }
}

/// Stream volume in MEDIA_STATUS.
public struct StreamVolume: Codable, Sendable, Hashable {
    public var level: Double?
    public var muted: Bool?

    public init(level: Double? = nil, muted: Bool? = nil) {
        self.level = level
        self.muted = muted
    }
}

/// `supportedMediaCommands` bits.
public struct MediaCommands: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let pause = MediaCommands(rawValue: 1)
    public static let seek = MediaCommands(rawValue: 2)
    public static let streamVolume = MediaCommands(rawValue: 4)
    public static let streamMute = MediaCommands(rawValue: 8)
    public static let skipForward = MediaCommands(rawValue: 16)
    public static let skipBackward = MediaCommands(rawValue: 32)
    public static let queueNext = MediaCommands(rawValue: 64)
    public static let queuePrev = MediaCommands(rawValue: 128)
    public static let queueShuffle = MediaCommands(rawValue: 256)
    public static let skipAd = MediaCommands(rawValue: 512)
    public static let queueRepeatAll = MediaCommands(rawValue: 1024)
    public static let queueRepeatOne = MediaCommands(rawValue: 2048)
    public static let editTracks = MediaCommands(rawValue: 4096)
    public static let playbackRate = MediaCommands(rawValue: 8192)
    public static let like = MediaCommands(rawValue: 16384)
    public static let dislike = MediaCommands(rawValue: 32768)
    public static let follow = MediaCommands(rawValue: 65536)
    public static let unfollow = MediaCommands(rawValue: 131072)
    public static let streamTransfer = MediaCommands(rawValue: 262144)

    /// PAUSE | SEEK | STREAM_VOLUME | STREAM_MUTE | EDIT_TRACKS | PLAYBACK_RATE (12303).
    public static let allBasicMedia: MediaCommands = [.pause, .seek, .streamVolume, .streamMute, .editTracks, .playbackRate]

    /// snake_case names, in bit order, for the MQTT `supported_commands` list.
    public static let names: [(MediaCommands, String)] = [
        (.pause, "pause"), (.seek, "seek"), (.streamVolume, "stream_volume"), (.streamMute, "stream_mute"),
        (.skipForward, "skip_forward"), (.skipBackward, "skip_backward"), (.queueNext, "queue_next"),
        (.queuePrev, "queue_prev"), (.queueShuffle, "queue_shuffle"), (.skipAd, "skip_ad"),
        (.queueRepeatAll, "queue_repeat_all"), (.queueRepeatOne, "queue_repeat_one"),
        (.editTracks, "edit_tracks"), (.playbackRate, "playback_rate"), (.like, "like"),
        (.dislike, "dislike"), (.follow, "follow"), (.unfollow, "unfollow"),
        (.streamTransfer, "stream_transfer"),
    ]

    public var names: [String] { MediaCommands.names.filter { contains($0.0) }.map(\.1) }
}
