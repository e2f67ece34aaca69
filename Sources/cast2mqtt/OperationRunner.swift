import Bridge
import CastClient
import CastProtocol

/// Runs one `CastOperation` of the bridge on a device client. Every path ends in exactly one
/// result. The statuses that answer a request reach the bridge through the client's events
/// (before this result), so a result says only whether the device confirmed, plus the data of
/// a reply (an app message, a session state).
enum OperationRunner {
    static func run(_ operation: CastOperation, on client: CastDeviceClient) async -> Result<OperationResult, BridgeError> {
        do {
            return .success(try await perform(operation, on: client))
        } catch {
            return .failure(Adapt.bridgeError(error))
        }
    }

    private static func perform(_ operation: CastOperation, on client: CastDeviceClient) async throws -> OperationResult {
        switch operation.kind {
        case .getReceiverStatus:
            try await client.getReceiverStatus()
        case .getMediaStatus:
            // Nothing to read without a joined app (the bridge asks only when one runs).
            guard await client.snapshot.app != nil else { return .done }
            try await client.getMediaStatus()
        case .launch(let appId):
            try await client.launch(appId: appId)
        case .stopApp(let sessionId):
            try await client.stopApp(sessionId: sessionId)
        case .setVolume(let level):
            try await client.setVolume(level: level)
        case .setMuted(let muted):
            try await client.setMuted(muted)
        case .media(let request):
            try await client.sendMediaRequest(request)
        case .load(let request, let appId):
            try await client.ensureApp(appId)
            try await client.load(request)
        case .queueLoad(let request, let appId):
            try await client.ensureApp(appId)
            try await client.queueLoad(request)
        case .send(let namespace, let payload, let appId, let awaitReply):
            if let appId { try await client.ensureApp(appId) }
            let reply = try await client.sendAppMessage(namespace: namespace, payload: payload,
                                                        awaitReply: awaitReply ? operation.timeout : nil)
            return reply.map(OperationResult.appMessage) ?? .done
        case .storeSession:
            return .sessionState(try await client.storeSession())
        case .resumeSession(let state, let appId):
            try await client.ensureApp(appId)
            try await client.resumeSession(state)
        }
        return .done
    }
}
