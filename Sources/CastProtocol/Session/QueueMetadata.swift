/// What the session machine knows of one media session's queue: the items' order and the items
/// whose metadata it has. A receiver often lists a queue by ids only (in MEDIA_STATUS `items`
/// without `media`, or in QUEUE_CHANGE); the metadata of the others is asked with
/// QUEUE_GET_ITEMS in batches of `batchSize`, one request at a time, and the order with
/// QUEUE_GET_ITEM_IDS when a change leaves it unknown. Bounded: at most `maxItems` ids are kept
/// (the rest of a longer queue is left out), an item's metadata takes at most `maxItemBytes` (a
/// larger one is kept without its app data, tracks and ad breaks, or not at all) and a queue's
/// at most `maxTotalBytes` (as JSON), and an item the device does not describe when asked is not
/// asked again until it changes.
struct QueueMetadata: Sendable, Hashable {
    static let maxItems = 500
    static let batchSize = 20
    static let maxItemBytes = 16_384
    static let maxTotalBytes = 262_144

    /// What to ask the receiver next.
    enum Request: Sendable, Hashable {
        case itemIds
        case items([Int])
    }

    /// The media session the queue belongs to.
    private(set) var mediaSessionId: Int?
    /// Item ids in queue order; nil while unknown.
    private(set) var order: [Int]?
    /// Items with their metadata, by id (only ids in `order`), and their size as JSON.
    private var known: [Int: QueueItem] = [:]
    private var sizes: [Int: Int] = [:]
    /// Ids whose metadata was asked and not (yet) answered; one request at a time.
    private var inFlight: Request?
    /// Ids the device did not describe when asked: not asked again until they change.
    private var unavailable: Set<Int> = []
    /// The order must be asked (a change the machine could not apply).
    private var orderWanted = false

    /// A new media session (or none): everything known of the old queue goes.
    mutating func reset(session: Int?) {
        self = QueueMetadata()
        mediaSessionId = session
    }

    /// A media status (merged): adopts its session and its `items` (ids in order, metadata where
    /// given). A status with `queueData` but no items of a queue not known yet asks the order.
    mutating func take(_ status: MediaStatus) {
        if let session = status.mediaSessionId, session != mediaSessionId { reset(session: session) }
        if let items = status.items {
            var ids: [Int] = []
            for item in items.prefix(Self.maxItems) {
                guard let id = item.itemId else { continue }
                ids.append(id)
                if item.media != nil, known[id] != item { keep(item, id) }
            }
            setOrder(ids)
        } else if order == nil, status.queueData != nil {
            orderWanted = true
        }
    }

    /// QUEUE_ITEM_IDS: the whole order.
    mutating func takeIds(_ ids: [Int]) {
        if inFlight == .itemIds { inFlight = nil }
        orderWanted = false
        setOrder(Array(ids.prefix(Self.maxItems)))
    }

    /// QUEUE_ITEMS: metadata of some items (only those still in the queue are kept).
    mutating func takeItems(_ items: [QueueItem]) {
        let inQueue = Set(order ?? [])
        for item in items {
            guard let id = item.itemId, inQueue.contains(id), item.media != nil else { continue }
            keep(item, id)
        }
    }

    /// QUEUE_CHANGE, applied to the order when it can be; otherwise the order is asked again.
    mutating func take(_ change: QueueChange) {
        let ids = change.itemIds ?? []
        switch change.changeType {
        case "INSERT":
            guard var list = order, !ids.isEmpty else { orderWanted = true; return }
            let fresh = ids.filter { !list.contains($0) }
            let at = change.insertBefore.flatMap { list.firstIndex(of: $0) } ?? list.count
            list.insert(contentsOf: fresh, at: at)
            setOrder(Array(list.prefix(Self.maxItems)))
        case "REMOVE":
            guard let list = order else { orderWanted = true; return }
            let gone = Set(ids)
            setOrder(list.filter { !gone.contains($0) })
        case "ITEMS_CHANGE":
            for id in ids {
                forget(id)
                unavailable.remove(id)
            }
        case "UPDATE":
            if ids.isEmpty { orderWanted = true } else { setOrder(Array(ids.prefix(Self.maxItems))) }
        case "NO_CHANGE":
            break
        default:
            orderWanted = true
        }
    }

    /// The request in flight was answered or failed: ids it asked that are still not described
    /// are not asked again.
    mutating func requestDone(_ request: Request) {
        guard inFlight == request else { return }
        inFlight = nil
        switch request {
        case .itemIds:
            orderWanted = false
        case .items(let ids):
            for id in ids where known[id] == nil { unavailable.insert(id) }
        }
    }

    /// The queue's items in order: described ones with their metadata, the others by id only;
    /// nil while the order is unknown.
    var items: [QueueItem]? {
        order.map { $0.map { known[$0] ?? QueueItem(itemId: $0, media: nil, autoplay: nil) } }
    }

    /// True when nothing more is to be asked: the order is known and every item is described or
    /// given up on. While a fetch runs, its batches are not published one by one.
    var isComplete: Bool {
        if orderWanted || inFlight == .itemIds { return false }
        guard let order else { return true }
        return order.allSatisfy { known[$0] != nil || unavailable.contains($0) }
    }

    /// The next request to send, if one is due and none is in flight (it is then in flight).
    mutating func nextRequest() -> Request? {
        guard inFlight == nil, mediaSessionId != nil else { return nil }
        if orderWanted {
            inFlight = .itemIds
            return .itemIds
        }
        guard let order else { return nil }
        var missing: [Int] = []
        for id in order where known[id] == nil && !unavailable.contains(id) {
            missing.append(id)
            if missing.count == Self.batchSize { break }
        }
        guard !missing.isEmpty else { return nil }
        let request = Request.items(missing)
        inFlight = request
        return request
    }

    private mutating func setOrder(_ ids: [Int]) {
        // Duplicates would make the document ambiguous: the first place of an id wins.
        var seen = Set<Int>()
        let unique = ids.filter { seen.insert($0).inserted }
        order = unique
        for id in known.keys where !seen.contains(id) { forget(id) }
        unavailable.formIntersection(seen)
    }

    /// Keeps an item's metadata within the bounds: too large, it is kept without its app data,
    /// tracks and ad breaks; still too large, or past the queue's budget, the item stays listed
    /// by id and is not asked again.
    private mutating func keep(_ item: QueueItem, _ id: Int) {
        forget(id)
        var kept = item
        var size = Self.size(kept)
        if size > Self.maxItemBytes {
            kept.customData = nil
            kept.activeTrackIds = nil
            if var media = kept.media {
                media.customData = nil
                media.tracks = nil
                media.textTrackStyle = nil
                media.breaks = nil
                media.breakClips = nil
                if let images = media.metadata?.images { media.metadata?.images = Array(images.prefix(4)) }
                kept.media = media
            }
            size = Self.size(kept)
        }
        guard size <= Self.maxItemBytes, totalBytes + size <= Self.maxTotalBytes else {
            unavailable.insert(id)
            return
        }
        known[id] = kept
        sizes[id] = size
        totalBytes += size
        unavailable.remove(id)
    }

    private mutating func forget(_ id: Int) {
        known.removeValue(forKey: id)
        totalBytes -= sizes.removeValue(forKey: id) ?? 0
    }

    private var totalBytes = 0

    static func size(_ item: QueueItem) -> Int { (try? CastJSON.encode(item))?.utf8.count ?? Int.max }
}
