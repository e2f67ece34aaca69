import CastProtocol
import Foundation
import Logging
import Synchronization
import NIOCore
import NIOPosix
import NIOSSL

// The receiver platform and multizone namespaces of a simulated device.
extension SimulatedDevice {
    // MARK: - Receiver namespace

    func receiverStatus() -> ReceiverStatus {
        let video = configuration.castType == .video
        return ReceiverStatus(
            applications: app.map { [$0.receiverApplication] } ?? [], volume: loop.value.group.map(groupVolume) ?? volume,
            isActiveInput: video ? true : nil, isStandBy: video ? false : nil)
    }

    func receiverStatusJSON(requestId: Int) -> String {
        ReceiverResponse.status(requestId: requestId, receiverStatus()).json()
    }

    func broadcastReceiverStatus() {
        broadcast(from: CastEndpoint.receiver, namespace: CastNamespace.receiver, json: receiverStatusJSON(requestId: 0))
    }

    func handleReceiver(_ message: CastMessage, on connection: SenderConnection) {
        guard let json = Self.parseJSON(message.payload), let type = json["type"]?.stringValue,
              let requestId = json["requestId"]?.intValue
        else { return }  // the reference receiver ignores requests without requestId
        let source = message.sourceID
        func answer(_ response: ReceiverResponse, broadcastStatus: Bool = false) {
            reply(response.json(), from: CastEndpoint.receiver, namespace: CastNamespace.receiver, to: source,
                  on: connection, thenBroadcast: broadcastStatus ? receiverStatusJSON(requestId: 0) : nil)
        }
        switch type {
        case "GET_STATUS":
            answer(.status(requestId: requestId, receiverStatus()))
        case "LAUNCH":
            guard let appId = json["appId"]?.stringValue, !appId.isEmpty else {
                answer(.launchError(requestId: requestId, reason: "BAD_PARAMETER", extendedError: nil))
                return
            }
            guard RunningApp.make(appId: appId) != nil else {
                answer(.launchError(requestId: requestId, reason: "NOT_FOUND", extendedError: nil))
                return
            }
            recorder.count { $0.launches += 1 }
            if let app, app.appId == appId, app.kind != .backdrop {
                answer(.status(requestId: requestId, receiverStatus()))  // already running: same session
                return
            }
            later(configuration.launchLatency) {
                guard !self.shutDown else { return }
                self.launch(appId: appId, launchedFromCloud: false)
                self.send(CastMessage(source: CastEndpoint.receiver, destination: source,
                                      namespace: CastNamespace.receiver, json: self.receiverStatusJSON(requestId: requestId)),
                          on: connection)
                self.broadcastReceiverStatus()
            }
        case "STOP":
            let sessionId = json["sessionId"]?.stringValue
            if let sessionId, sessionId != app?.sessionId {
                answer(.invalidRequest(requestId: requestId, reason: "INVALID_SESSION_ID"))
                return
            }
            // Like a real device, the app takes a moment to go away. (It also keeps pychromecast,
            // which writes to its socket from two threads without a lock, from having its STOP
            // write overlap the CLOSE it sends back when the app transport closes.)
            later(configuration.stopLatency) {
                guard !self.shutDown else { return }
                self.stopApp(mediaIdleReason: nil)
                self.send(CastMessage(source: CastEndpoint.receiver, destination: source,
                                      namespace: CastNamespace.receiver, json: self.receiverStatusJSON(requestId: requestId)),
                          on: connection)
                self.broadcastReceiverStatus()
            }
        case "SET_VOLUME":
            guard let body = json["volume"]?.objectValue,
                  body["level"]?.doubleValue != nil || body["muted"]?.boolValue != nil
            else {
                answer(.invalidRequest(requestId: requestId, reason: "INVALID_PARAMS"))
                return
            }
            applyVolume(level: body["level"]?.doubleValue, muted: body["muted"]?.boolValue)
            answer(.status(requestId: requestId, receiverStatus()), broadcastStatus: true)
            if let level = volumeAfterReply {
                // Scheduled after the reply with the same latency: it follows it on the wire.
                later(replyDelay) {
                    self.applyVolume(level: level, muted: nil)
                    self.broadcastReceiverStatus()
                }
            }
        case "GET_APP_AVAILABILITY":
            let ids = json["appId"]?.arrayValue?.compactMap(\.stringValue) ?? json["appId"]?.stringValue.map { [$0] } ?? []
            var availability: [String: String] = [:]
            for id in ids { availability[id] = RunningApp.make(appId: id) == nil ? "APP_UNAVAILABLE" : "APP_AVAILABLE" }
            answer(.appAvailability(requestId: requestId, availability: availability))
        default:
            answer(.invalidRequest(requestId: requestId, reason: "INVALID_COMMAND"))
        }
    }

    /// A volume change from a sender, a remote or a group. A group's endpoint scales its members
    /// (`applyGroupVolume`); a member tells its groups what it now has.
    func applyVolume(level: Double?, muted: Bool?) {
        if isGroupEndpoint {
            applyGroupVolume(level: level, muted: muted)
            return
        }
        let before = volume
        if let level, level.isFinite, volume.controlType != "fixed" {
            volume.level = min(max(level, 0), 1)
        }
        if let muted { volume.muted = muted }
        if volume != before { notifyGroupsOfVolume() }
    }

    /// The idle state: Backdrop (new session) or no application at all.
    func resetApplications() {
        app = configuration.idleScreen ? RunningApp.make(appId: SimulatedAppID.backdrop) : nil
        media = nil
        loop.value.followedGroup = nil
        if isGroupEndpoint { groupAppChanged() }
    }

    /// Replaces the running app with a new session of `appId` (CLOSE for the old one). An id
    /// the simulator does not know runs as a showing-only app when `displayName` is given.
    func launch(appId: String, launchedFromCloud: Bool, displayName: String? = nil) {
        stopApp(mediaIdleReason: nil)
        if appId == SimulatedAppID.backdrop { return }
        app = RunningApp.make(appId: appId, launchedFromCloud: launchedFromCloud) ?? displayName.map {
            RunningApp(appId: appId, kind: .other, displayName: $0, namespaces: [], sessionId: UUID().uuidString.lowercased(),
                       launchedFromCloud: launchedFromCloud)
        }
        media = nil
        appLaunched()
        if isGroupEndpoint { groupAppChanged() }
    }

    /// Stops the running app (unless it is the idle screen): optional IDLE media broadcast, CLOSE
    /// from its transportId to every sender connected to it, then the idle state.
    func stopApp(mediaIdleReason: String?) {
        guard let running = app, running.kind != .backdrop else { return }
        if let reason = mediaIdleReason, let session = media {
            let status = session.idleStatus(reason: reason, at: configuration.clock.now())
            broadcast(from: running.transportId, namespace: CastNamespace.media,
                      json: MediaResponse.status(requestId: 0, [status]).json())
        }
        for connection in connections.values.sorted(by: { $0.number < $1.number }) {
            for source in connection.sources(connectedTo: running.transportId) {
                send(CastMessage(source: running.transportId, destination: source, namespace: CastNamespace.connection,
                                 json: ConnectionMessage.close(reasonCode: nil).json()), on: connection)
                connection.virtualConnections[source]?.remove(running.transportId)
            }
        }
        resetApplications()
    }

    // MARK: - Multizone

    func handleMultizone(_ message: CastMessage, on connection: SenderConnection) {
        guard let json = Self.parseJSON(message.payload), json["type"]?.stringValue == "GET_STATUS" else { return }
        let requestId = json["requestId"]?.intValue ?? 0
        // A group's endpoint answers with its members; any other device with the configured ones.
        let response = loop.value.group.map { multizoneStatus(requestId: requestId, $0) }
            ?? MultizoneMessage.status(requestId: requestId, devices: configuration.multizoneMembers,
                                       isMultichannel: false, playbackSession: nil)
        reply(response.json(), from: CastEndpoint.receiver, namespace: CastNamespace.multizone,
              to: message.sourceID, on: connection)
    }
}
