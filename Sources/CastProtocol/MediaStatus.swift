/// One entry of MEDIA_STATUS `status[]`. Every field is optional because devices send partial
/// updates; `merged(over:)` applies a partial status to the previous one.
public struct MediaStatus: Codable, Sendable, Hashable {
    public var mediaSessionId: Int?
    public var media: MediaInformation?
    /// `IDLE`, `PLAYING`, `PAUSED`, `BUFFERING` (or `LOADING` inside `extendedStatus`).
    public var playerState: String?
    /// With IDLE only: `FINISHED`, `CANCELLED`, `INTERRUPTED`, `ERROR`.
    public var idleReason: String?
    public var currentTime: Double?
    public var playbackRate: Double?
    public var supportedMediaCommands: Int?
    public var volume: StreamVolume?
    public var activeTrackIds: [Int]?
    public var currentItemId: Int?
    public var loadingItemId: Int?
    public var preloadedItemId: Int?
    public var items: [QueueItem]?
    public var queueData: JSONValue?
    public var repeatMode: String?
    public var breakStatus: BreakStatus?
    public var liveSeekableRange: JSONValue?
    public var videoInfo: VideoInfo?
    public var extendedStatus: ExtendedStatus?
    public var customData: JSONValue?

    /// `extendedStatus` while loading: `{playerState: "LOADING", media, mediaSessionId}`.
    public struct ExtendedStatus: Codable, Sendable, Hashable {
        public var playerState: String?
        public var media: MediaInformation?
        public var mediaSessionId: Int?

        public init(playerState: String? = nil, media: MediaInformation? = nil, mediaSessionId: Int? = nil) {
            self.playerState = playerState
            self.media = media
            self.mediaSessionId = mediaSessionId
        }
    }

    public init(mediaSessionId: Int? = nil, media: MediaInformation? = nil, playerState: String? = nil,
                idleReason: String? = nil, currentTime: Double? = nil, playbackRate: Double? = nil,
                supportedMediaCommands: Int? = nil, volume: StreamVolume? = nil, activeTrackIds: [Int]? = nil,
                currentItemId: Int? = nil, loadingItemId: Int? = nil, preloadedItemId: Int? = nil,
                items: [QueueItem]? = nil, queueData: JSONValue? = nil, repeatMode: String? = nil,
                breakStatus: BreakStatus? = nil, liveSeekableRange: JSONValue? = nil, videoInfo: VideoInfo? = nil,
                extendedStatus: ExtendedStatus? = nil, customData: JSONValue? = nil) {
        self.mediaSessionId = mediaSessionId
        self.media = media
        self.playerState = playerState
        self.idleReason = idleReason
        self.currentTime = currentTime
        self.playbackRate = playbackRate
        self.supportedMediaCommands = supportedMediaCommands
        self.volume = volume
        self.activeTrackIds = activeTrackIds
        self.currentItemId = currentItemId
        self.loadingItemId = loadingItemId
        self.preloadedItemId = preloadedItemId
        self.items = items
        self.queueData = queueData
        self.repeatMode = repeatMode
        self.breakStatus = breakStatus
        self.liveSeekableRange = liveSeekableRange
        self.videoInfo = videoInfo
        self.extendedStatus = extendedStatus
        self.customData = customData
    }

    enum CodingKeys: String, CodingKey {
        case mediaSessionId, media, playerState, idleReason, currentTime, playbackRate, supportedMediaCommands,
             volume, activeTrackIds, currentItemId, loadingItemId, preloadedItemId, items, queueData, repeatMode,
             breakStatus, liveSeekableRange, videoInfo, extendedStatus, customData
    }

    /// Lenient decoding: a field of the wrong type is treated as absent, never as a failure
    /// of the whole status.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func get<T: Decodable>(_ type: T.Type, _ key: CodingKeys) -> T? {
            (try? c.decodeIfPresent(type, forKey: key)) ?? nil
        }
        func int(_ key: CodingKeys) -> Int? {
            get(Int.self, key) ?? get(Double.self, key).flatMap(Int.init(jsonNumber:))
        }
        mediaSessionId = int(.mediaSessionId)
        media = get(MediaInformation.self, .media)
        playerState = get(String.self, .playerState)
        idleReason = get(String.self, .idleReason)
        currentTime = get(Double.self, .currentTime)
        playbackRate = get(Double.self, .playbackRate)
        supportedMediaCommands = int(.supportedMediaCommands)
        volume = get(StreamVolume.self, .volume)
        activeTrackIds = get([Int].self, .activeTrackIds)
        currentItemId = int(.currentItemId)
        loadingItemId = int(.loadingItemId)
        preloadedItemId = int(.preloadedItemId)
        items = get([QueueItem].self, .items)
        queueData = get(JSONValue.self, .queueData)
        repeatMode = get(String.self, .repeatMode)
        breakStatus = get(BreakStatus.self, .breakStatus)
        liveSeekableRange = get(JSONValue.self, .liveSeekableRange)
        videoInfo = get(VideoInfo.self, .videoInfo)
        extendedStatus = get(ExtendedStatus.self, .extendedStatus)
        customData = get(JSONValue.self, .customData)
    }

    /// This (possibly partial) status applied over `previous`: keys this status leaves out keep
    /// their previous values, as pychromecast does. A status for a different media session
    /// replaces the previous one entirely. `idleReason` belongs to `playerState` and is never
    /// carried over a new player state; `breakStatus` only while the state is unchanged.
    public func merged(over previous: MediaStatus?) -> MediaStatus {
        guard let previous else { return self }
        if let id = mediaSessionId, let old = previous.mediaSessionId, id != old { return self }
        var out = self
        out.mediaSessionId = mediaSessionId ?? previous.mediaSessionId
        out.media = media ?? previous.media
        out.playerState = playerState ?? previous.playerState
        out.idleReason = playerState == nil ? (idleReason ?? previous.idleReason) : idleReason
        out.currentTime = currentTime ?? previous.currentTime
        out.playbackRate = playbackRate ?? previous.playbackRate
        out.supportedMediaCommands = supportedMediaCommands ?? previous.supportedMediaCommands
        out.volume = volume ?? previous.volume
        out.activeTrackIds = activeTrackIds ?? previous.activeTrackIds
        out.currentItemId = currentItemId ?? previous.currentItemId
        out.loadingItemId = loadingItemId ?? previous.loadingItemId
        out.preloadedItemId = preloadedItemId ?? previous.preloadedItemId
        out.items = items ?? previous.items
        out.queueData = queueData ?? previous.queueData
        out.repeatMode = repeatMode ?? previous.repeatMode
        out.breakStatus = playerState == nil ? (breakStatus ?? previous.breakStatus) : breakStatus
        out.liveSeekableRange = liveSeekableRange ?? previous.liveSeekableRange
        out.videoInfo = videoInfo ?? previous.videoInfo
        out.extendedStatus = extendedStatus
        out.customData = customData ?? previous.customData
        return out
    }

    /// The media being played or, while loading, being loaded.
    public var effectiveMedia: MediaInformation? { media ?? extendedStatus?.media }

    public var commands: MediaCommands { MediaCommands(rawValue: supportedMediaCommands ?? 0) }
}
