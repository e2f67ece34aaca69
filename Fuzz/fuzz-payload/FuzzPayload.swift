import CastProtocol
import Foundation
import FuzzSupport

/// Input: up to 16 messages from a device, separated by NUL bytes. In each, the first byte picks
/// the envelope and the rest is the payload:
///
/// - bits 0–2, the namespace: 0 connection, 1 heartbeat, 2 receiver, 3 media, 4 multizone,
///   5 an app's own namespace, 6 device auth, 7 an unknown `tp.*` namespace;
/// - bit 3: a BINARY payload instead of STRING (text that is not UTF-8 is always sent BINARY);
/// - bit 4: from the joined app's transport instead of `receiver-0`;
/// - bit 5: to the broadcast destination `*` instead of `sender-0`.
///
/// Every payload goes through every namespace parser directly (and the header scanner is compared
/// with JSONDecoder on it), and then, as a message, through
/// the connection state machine (opened and answered, with requests pending on the receiver,
/// media and app namespaces), `CastInbound.classify` (the client's dispatch) and the session
/// machine the client runs (joining the active app, merging media status, queue items and changes,
/// multizone members), whose session actions are carried out on the connection machine as the client does.
func fuzzPayload(_ input: UnsafeRawBufferPointer) {
    var machine = Machine(configuration: CastConnectionConfiguration())
    var session = CastSessionMachine(isGroup: true)
    let now = ContinuousClock.Instant.now
    let date = Date(timeIntervalSince1970: 1_800_000_000)
    _ = machine.start()
    _ = machine.channelActive(now: now)
    _ = session.connectionAnswered()
    _ = session.receiverStatus(ReceiverStatus(applications: [ReceiverApplication(
        appId: CastAppID.defaultMediaReceiver, namespaces: [CastNamespace.media], sessionId: "s", transportId: "transport-1")]),
        now: date)
    _ = machine.connectEndpoint("transport-1")
    var pendingQueue: [CastSessionMachine.QueueRequest] = []
    func run(_ actions: [CastSessionMachine.Action]) {
        for action in actions {
            switch action {
            case .join(let transport, _): _ = machine.connectEndpoint(transport)
            case .leave(let transport): _ = machine.closeEndpoint(transport)
            case .forget(let transport): machine.forgetEndpoint(transport)
            case .askReceiverStatus, .askMultizoneStatus, .publish: break
            // The client sends these and reports their end (answered or not) to the machine.
            case .askQueueItemIds: pendingQueue.append(.itemIds)
            case .askQueueItems(_, _, let ids): pendingQueue.append(.items(ids))
            }
        }
    }

    for record in input.split(separator: 0, maxSplits: 15, omittingEmptySubsequences: true) {
        guard let selector = record.first else { continue }
        let body = Array(record.dropFirst())
        let payload: CastPayload
        if selector & 0x08 == 0, let text = String(validating: body, as: UTF8.self) {
            payload = .string(text)
        } else {
            payload = .binary(body)
        }
        parseEverywhere(payload)

        let joinedTransport = session.joinedApp?.transportId
        let source = selector & 0x10 != 0 ? (joinedTransport ?? "transport-1") : CastEndpoint.receiver
        let destination = selector & 0x20 != 0 ? CastEndpoint.broadcast : "sender-0"
        let message = CastMessage(sourceID: source, destinationID: destination,
                                  namespace: namespaces[Int(selector & 0x07)], payload: payload)
        // Requests pending on the receiver, media and app namespaces: a reply may complete one.
        if machine.isConnected {
            for (namespace, endpoint) in [(CastNamespace.receiver, CastEndpoint.receiver),
                                          (CastNamespace.media, joinedTransport ?? "transport-1"),
                                          ("urn:x-cast:com.example.app", joinedTransport ?? "transport-1")] {
                _ = try? machine.sendRequest(namespace: namespace, destination: endpoint, now: now) { id in
                    .string(#"{"type":"GET_STATUS","requestId":\#(id)}"#)
                }
            }
        }

        var open = true
        for action in machine.messageReceived(message, now: now) {
            switch action {
            case .emit(.message(let delivered)):
                switch CastInbound.classify(delivered, joinedTransport: session.joinedApp?.transportId) {
                case .receiverStatus(let status)?: run(session.receiverStatus(status, now: date))
                case .mediaStatus(let status)?: run(session.mediaStatus(status, now: date))
                case .multizone(let message)?: run(session.multizone(message))
                case .queueItemIds(let ids)?: run(session.queueItemIds(ids))
                case .queueItems(let items)?: run(session.queueItems(items))
                case .queueChange(let change)?: run(session.queueChange(change))
                case .appMessage, nil: break
                }
            case .emit(.virtualConnectionClosed(let endpoint)):
                run(session.transportClosed(endpoint))
            case .emit(.disconnected(let reason)):
                run(session.disconnected(reason, silentSince: date))
            case .close:
                open = false
            default:
                break
            }
        }
        // Queue requests end (the device answered them or not): the machine asks the next.
        let ended = pendingQueue
        pendingQueue.removeAll()
        for request in ended { run(session.queueRequestDone(request)) }
        if !open { break }
    }
    _ = machine.shutdown()
}

private typealias Machine = CastConnectionStateMachine<ContinuousClock.Instant>

private let namespaces = [
    CastNamespace.connection, CastNamespace.heartbeat, CastNamespace.receiver, CastNamespace.media,
    CastNamespace.multizone, "urn:x-cast:com.example.app", CastNamespace.deviceAuth,
    "urn:x-cast:com.google.cast.tp.unknown",
]

/// Every payload parser the client has, whatever the namespace.
private func parseEverywhere(_ payload: CastPayload) {
    // The one-pass header scanner must read exactly what JSONDecoder reads.
    let header = CastPayloadHeader.parse(payload)
    let reference = CastPayloadHeader.parseWithJSONDecoder(payload)
    if header != reference {
        fatalError("header scanner disagrees with JSONDecoder: \(String(describing: header)) vs \(String(describing: reference)) on \(String(describing: payload.text))")
    }
    // So must the one-pass JSON parser, on every input it decides.
    if let text = payload.text { checkJSONParser(Array(text.utf8)) }
    _ = ConnectionMessage.parse(payload)
    _ = HeartbeatMessage.parse(payload)
    checkReceiverParse(payload)
    checkMediaParse(payload)
    if case .status(_, let list)? = try? MediaResponse.parse(payload) {
        var merged: MediaStatus?
        for status in list.prefix(4) { merged = status.merged(over: merged) }
    }
    _ = try? MultizoneMessage.parse(payload)
}
