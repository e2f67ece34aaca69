import Bridge
import CastClient
import CastProtocol
import NIOCore

/// Hands one `CastOperation` of the bridge to its device's client, as the client's requests
/// (futures on the device's event loop). Every path ends in exactly one result. The statuses that
/// answer a request reach the bridge as snapshots (before this result), so a result says only
/// whether the device confirmed, plus the data of a reply (an app message, a session state).
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
        switch operation.kind {
        case .getReceiverStatus:
            return done(requests.getReceiverStatus())
        case .getMediaStatus:
            // Nothing to read without a joined app (the bridge asks only when one runs).
            return done(requests.mediaStatusIfJoined())
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
        case .load(let request, let appId):
            return inApp(appId, .load(request), requests)
        case .queueLoad(let request, let appId):
            return inApp(appId, .queueLoad(request), requests)
        case .send(let namespace, let payload, let appId, let awaitReply):
            let send: @Sendable () -> EventLoopFuture<CastPayload?> = {
                requests.sendAppMessage(namespace: namespace, payload: payload, awaitReply: awaitReply ? operation.timeout : nil)
            }
            let reply = appId.map { requests.ensureApp($0).flatMap { _ in send() } } ?? send()
            return reply.map { $0.map(OperationResult.appMessage) ?? .done }
        case .storeSession(let mediaSessionId):
            return requests.storeSession(mediaSessionId: mediaSessionId).map(OperationResult.sessionState)
        case .resumeSession(let state, let appId):
            return inApp(appId, .resumeSession(sessionState: state), requests)
        }
    }

    /// Joins or launches `appId`, then sends `request` to it.
    private static func inApp(_ appId: String, _ request: MediaRequest,
                              _ requests: CastDeviceClient.Requests) -> EventLoopFuture<OperationResult> {
        requests.ensureApp(appId).flatMap { _ in done(requests.media(request)) }
    }

    private static func done<T>(_ future: EventLoopFuture<T>) -> EventLoopFuture<OperationResult> {
        future.map { _ in .done }
    }
}
