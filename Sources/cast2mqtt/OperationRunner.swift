import Bridge
import CastClient
import CastProtocol

/// Runs one `CastOperation` of the bridge on a device client and returns what the bridge wants
/// back. Every path ends in exactly one result.
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
            return .receiverStatus(try await client.getReceiverStatus())
        case .getMediaStatus:
            guard await client.snapshot.app != nil else { return .mediaStatus([]) }
            return .mediaStatus(try await client.getMediaStatus().map { [$0] } ?? [])
        case .launch(let appId):
            try await client.launch(appId: appId)
            return .receiverStatus(await currentReceiver(client))
        case .stopApp(let sessionId):
            return .receiverStatus(try await client.stopApp(sessionId: sessionId))
        case .setVolume(let level):
            return .receiverStatus(try await client.setVolume(level: level))
        case .setMuted(let muted):
            return .receiverStatus(try await client.setMuted(muted))
        case .media(let request):
            return .mediaStatus(try await client.sendMediaRequest(request).map { [$0] } ?? [])
        case .load(let request, let appId):
            try await client.ensureApp(appId)
            return .mediaStatus(try await client.load(request).map { [$0] } ?? [])
        case .queueLoad(let request, let appId):
            try await client.ensureApp(appId)
            return .mediaStatus(try await client.queueLoad(request).map { [$0] } ?? [])
        case .send(let namespace, let payload, let appId, let awaitReply):
            if let appId { try await client.ensureApp(appId) }
            let reply = try await client.sendAppMessage(namespace: namespace, payload: payload,
                                                        awaitReply: awaitReply ? operation.timeout : nil)
            return reply.map(OperationResult.appMessage) ?? .done
        case .storeSession:
            return .sessionState(try await client.storeSession())
        case .resumeSession(let state, let appId):
            try await client.ensureApp(appId)
            return .mediaStatus(try await client.resumeSession(state).map { [$0] } ?? [])
        }
    }

    private static func currentReceiver(_ client: CastDeviceClient) async -> ReceiverStatus {
        if let status = await client.snapshot.receiver { return status }
        return (try? await client.getReceiverStatus()) ?? ReceiverStatus()
    }
}
