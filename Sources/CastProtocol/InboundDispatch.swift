/// What a message from a device means to the client, once its payload is parsed: the parsing half
/// of `DeviceConnection.dispatch` (CastClient), kept pure so that tests and the `fuzz-payload`
/// target run exactly the parsers the client runs on device input.
package enum CastInbound: Sendable, Hashable {
    /// A RECEIVER_STATUS (reply or broadcast).
    case receiverStatus(ReceiverStatus)
    /// A MEDIA_STATUS from the joined app's transport: its first entry (nil for an empty list).
    case mediaStatus(MediaStatus?)
    /// QUEUE_ITEM_IDS, QUEUE_ITEMS or QUEUE_CHANGE from the joined app's transport.
    case queueItemIds([Int])
    case queueItems([QueueItem])
    case queueChange(QueueChange)
    /// Anything on the multizone namespace that parses.
    case multizone(MultizoneMessage)
    /// A message on an app's own (non-platform) namespace.
    case appMessage(namespace: String, sourceID: String, payload: CastPayload)

    /// Classifies one message the connection state machine passed on (`.emit(.message)`).
    /// `joinedTransport` is the transport id of the app session the client joined, if any; media
    /// status from any other source is ignored. Nil: nothing for the client to do.
    package static func classify(_ message: CastMessage, joinedTransport: String?) -> CastInbound? {
        switch message.namespace {
        case CastNamespace.receiver:
            guard case .status(_, let status)? = try? ReceiverResponse.parse(message.payload) else { return nil }
            return .receiverStatus(status)
        case CastNamespace.media:
            guard let joinedTransport, message.sourceID == joinedTransport else { return nil }
            switch try? MediaResponse.parse(message.payload) {
            case .status(_, let list)?: return .mediaStatus(list.first)
            case .queueItemIds(_, let ids)?: return .queueItemIds(ids)
            case .queueItems(_, let items)?: return .queueItems(items)
            case .queueChange(_, let change)?: return .queueChange(change)
            default: return nil
            }
        case CastNamespace.multizone:
            guard let parsed = try? MultizoneMessage.parse(message.payload) else { return nil }
            return .multizone(parsed)
        default:
            guard !CastNamespace.isPlatform(message.namespace) else { return nil }
            return .appMessage(namespace: message.namespace, sourceID: message.sourceID, payload: message.payload)
        }
    }
}
