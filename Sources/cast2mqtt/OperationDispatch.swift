import Bridge
import CastClient
import CastProtocol
import NIOCore

/// Hands one `CastOperation` of the bridge to its device's client, as the client's requests
/// (futures on the device's event loop). Every path ends in exactly one result. The statuses that
/// answer a request reach the bridge as snapshots (before this result), so a result says only
/// whether the device confirmed, plus the data of a reply (an app message, a session state).
/// Whether an app is launched before a request is the bridge's decision (`launchFirst`, made by
/// its planner against the device's snapshot); nothing here looks at the device's state.
///
/// No task and no waiting: `dispatch` hands the request to the device's event loop and returns;
/// the completion is called on that loop. The consumer thus never waits for a device, and a
/// command reaches the device with one thread hop (consumer → the device's loop).
enum OperationDispatch {
    static func dispatch(_ operation: CastOperation, to client: CastDeviceClient,
                         completion: @escaping @Sendable (Result<OperationResult, BridgeError>) -> Void) {
        requests(for: operation, client.requests).whenComplete { result in
            completion(result.mapError(Adapt.bridgeError))
        }
    }

    private static func requests(for operation: CastOperation, _ requests: CastDeviceClient.Requests) -> EventLoopFuture<OperationResult> {
        guard let appId = operation.launchFirst else { return request(operation, requests) }
        return requests.launch(appId: appId).flatMap { _ in request(operation, requests) }
    }

    private static func request(_ operation: CastOperation, _ requests: CastDeviceClient.Requests) -> EventLoopFuture<OperationResult> {
        switch operation.kind {
        case .getReceiverStatus:
            // Only a refresh asks it: an app given up on (its transport kept closing) is tried again.
            return done(requests.refreshStatus())
        case .getMediaStatus:
            // Planned only with an app joined (else completed by the bridge without asking).
            return done(requests.media(.getStatus(mediaSessionId: nil)))
        case .launch(let appId):
            return done(requests.launch(appId: appId))
        case .stopApp(let sessionId):
            return done(requests.stopApp(sessionId: sessionId))
        case .setVolume(let level):
            return done(requests.setVolume(level: level))
        case .setMuted(let muted):
            return done(requests.setMuted(muted))
        case .media(let request):
            return done(requests.media(request))
        case .load(let request, _):
            return done(requests.media(.load(request)))
        case .queueLoad(let request, _):
            return done(requests.media(.queueLoad(request)))
        case .send(let namespace, let payload, _, let awaitReply):
            return requests.sendAppMessage(namespace: namespace, payload: payload, awaitReply: awaitReply ? operation.timeout : nil)
                .map { $0.map(OperationResult.appMessage) ?? .done }
        case .storeSession(let mediaSessionId):
            return requests.storeSession(mediaSessionId: mediaSessionId).map(OperationResult.sessionState)
        case .resumeSession(let state, _):
            return done(requests.media(.resumeSession(sessionState: state)))
        }
    }

    private static func done<T>(_ future: EventLoopFuture<T>) -> EventLoopFuture<OperationResult> {
        future.map { _ in .done }
    }
}
