import CastProtocol
import Foundation
import Logging
import Synchronization
import NIOCore
import NIOPosix
import NIOSSL

// Fault injection and stream transfer of a simulated device (public API for tests and cast-sim).
extension SimulatedDevice {
    /// Refuse (or accept again) CONNECTs to the running app's transport: the device answers
    /// them with CLOSE from the transport.
    public func refuseAppConnections(_ refuse: Bool) async {
        try? await eventLoop.submit { self.refusingAppConnections = refuse }.get()
    }

    // MARK: - Public API: faults

    /// Every sender connection opened from now on loses its first `count` messages (0 ends
    /// the fault): the CONNECT and GET_STATUS of a handshake vanish, later messages arrive.
    public func swallowFirstMessages(_ count: Int) async {
        try? await eventLoop.submit { self.swallowFirstMessages = max(0, count) }.get()
    }

    /// Answer requests after `latency` from now on (nil: the configured reply latency again).
    public func setReplyLatency(_ latency: TimeAmount?) async {
        try? await eventLoop.submit { self.replyLatencyOverride = latency }.get()
    }

    /// After every SET_VOLUME reply, a remote sets the volume to `level` (nil ends it): a
    /// broadcast with newer state right behind the reply.
    public func changeVolumeAfterReplies(to level: Double?) async {
        try? await eventLoop.submit { self.volumeAfterReply = level }.get()
    }

    /// Answer PINGs and nothing else (`false` ends it): the transport is up, the platform is not.
    public func answerPingsOnly(_ enabled: Bool) async {
        try? await eventLoop.submit { self.answeringPingsOnly = enabled }.get()
    }

    /// Closes every sender connection (TCP close); the device keeps listening.
    public func dropConnections() async {
        let future = eventLoop.flatSubmit {
            EventLoopFuture.andAllComplete(self.connections.values.map { $0.channel.close() }, on: self.eventLoop)
        }
        try? await future.get()
    }

    /// Stops answering anything and stops pinging; sockets stay open. `resume()` ends it.
    public func silence() async { try? await eventLoop.submit { self.silenced = true }.get() }

    /// Ends `silence()`.
    public func resume() async { try? await eventLoop.submit { self.silenced = false }.get() }

    /// Simulates a reboot: every connection and app session is dropped, the listeners (Cast and
    /// `eureka_info`) close, and after `refuseFor` the device listens again on the same address
    /// and port (with no app running). Returns once the listeners are closed (or, with a zero
    /// refusal, listening again).
    public func restart(refuseFor: TimeAmount = .zero) async throws {
        let future = eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            self.recorder.count { $0.restarts += 1 }
            self.rebind?.cancel()
            self.silenced = false
            let closed = self.closeEverything()
            self.resetApplications()
            return closed.flatMap {
                if refuseFor <= .zero { return self.rebindWithRetry(attempts: 50) }
                self.rebind = self.eventLoop.scheduleTask(in: refuseFor) {
                    self.rebindWithRetry(attempts: 50).whenFailure { error in
                        self.logger.error("could not listen again on \(self.host):\(self.port): \(error)")
                    }
                }
                return self.eventLoop.makeSucceededVoidFuture()
            }
        }
        try await future.get()
    }

    func rebindWithRetry(attempts: Int) -> EventLoopFuture<Void> {
        guard !shutDown else { return eventLoop.makeSucceededVoidFuture() }
        return bindListeners().flatMapError { error in
            guard attempts > 1 else { return self.eventLoop.makeFailedFuture(error) }
            // A listener that did bind is closed again, so the next attempt starts clean.
            return self.closeEverything().flatMap {
                self.eventLoop.scheduleTask(in: .milliseconds(100)) {}.futureResult
            }.flatMap {
                self.rebindWithRetry(attempts: attempts - 1)
            }
        }
    }

    /// Sends a frame with a valid length prefix and random (unparseable) bytes to every sender.
    public func sendGarbageFrame() async {
        try? await eventLoop.submit {
            for connection in self.connections.values {
                var body: [UInt8] = [0xFF, 0xFF, 0xFF]
                body += (0..<29).map { _ in UInt8.random(in: 0...255) }
                let header: [UInt8] = [0, 0, 0, UInt8(body.count)]
                connection.injector.writeRaw(header + body)
            }
        }.get()
    }

    /// Sends a frame header announcing a body over 64 KiB (1 MiB) to every sender.
    public func sendOversizedFrameHeader() async {
        try? await eventLoop.submit {
            for connection in self.connections.values {
                connection.injector.writeRaw([0x00, 0x10, 0x00, 0x00, 0x08, 0x00, 0x12, 0x00])
            }
        }.get()
    }

    /// Changes the device volume as a remote control would: RECEIVER_STATUS broadcast.
    public func setVolumeRemotely(level: Double?, muted: Bool? = nil) async {
        try? await eventLoop.submit {
            self.applyVolume(level: level, muted: muted)
            self.later(self.replyDelay) { self.broadcastReceiverStatus() }
        }.get()
    }

    /// Ends the current media now: IDLE / FINISHED broadcast. False when nothing plays.
    @discardableResult
    public func finishMedia() async -> Bool {
        (try? await eventLoop.submit { () -> Bool in
            guard let session = self.media, let running = self.app else { return false }
            let now = self.configuration.clock.now()
            self.media = nil
            var ended = session.idleStatus(reason: "FINISHED", at: now)
            ended.currentTime = session.duration ?? ended.currentTime
            self.broadcast(from: running.transportId, namespace: CastNamespace.media,
                           json: MediaResponse.status(requestId: 0, [ended]).json())
            return true
        }.get()) ?? false
    }

    /// Plays media as another sender would (the Google Home app, a phone): launches `appId` unless
    /// it runs, then loads `request` (a `LoadRequestData`, or a QUEUE_LOAD body with `queue`),
    /// broadcasting the statuses every connected sender sees. False when the app is unknown or
    /// the request does not load.
    @discardableResult
    public func remoteLoad(appId: String, request: JSONValue, queue: Bool = false) async -> Bool {
        (try? await eventLoop.submit { () -> Bool in
            guard RunningApp.make(appId: appId) != nil else { return false }
            if self.app?.appId != appId {
                self.launch(appId: appId, launchedFromCloud: false)
                self.broadcastReceiverStatus()
            }
            guard let running = self.app, running.kind == .media,
                  case .success = self.load(request, queue: queue, at: self.configuration.clock.now()),
                  let session = self.media else { return false }
            self.broadcast(from: running.transportId, namespace: CastNamespace.media,
                           json: MediaResponse.status(requestId: 0, [session.status(at: self.configuration.clock.now())]).json())
            return true
        }.get()) ?? false
    }

    /// Broadcasts an unsolicited message from the running app (e.g. the echo app) on `namespace`.
    /// False when no (non-idle) app runs.
    @discardableResult
    public func pushAppMessage(namespace: String = SimulatedAppID.echoNamespace, payload: CastPayload) async -> Bool {
        (try? await eventLoop.submit { () -> Bool in
            guard let running = self.app, running.kind != .backdrop else { return false }
            for connection in self.connections.values.sorted(by: { $0.number < $1.number })
            where !connection.sources(connectedTo: running.transportId).isEmpty {
                self.send(CastMessage(sourceID: running.transportId, destinationID: CastEndpoint.broadcast,
                                      namespace: namespace, payload: payload), on: connection)
            }
            return true
        }.get()) ?? false
    }

    /// Advances this device's clock (a `ManualSimulatorClock` only) and applies the result (ends
    /// of ad clips and media, page and display timeouts) at once.
    public func advanceClock(by seconds: Double) async throws {
        guard let manual = configuration.clock as? ManualSimulatorClock else {
            throw SimulatorError("device \(id) runs on the system clock")
        }
        // What is idle now has been idle since before the jump.
        try await eventLoop.submit { self.checkAppTimeouts() }.get()
        manual.advance(by: seconds)
        try await eventLoop.submit {
            self.tick()
            self.checkAppTimeouts()
        }.get()
    }

    // MARK: - Stream transfer

    /// Source side of a cloud transfer: media IDLE/INTERRUPTED, CLOSE from the app, app gone.
    func detachForTransfer() async throws -> TransferredSession {
        try await eventLoop.submit { () throws -> TransferredSession in
            guard let running = self.app, running.kind != .backdrop else {
                throw SimulatorError("device \(self.id) runs no app to transfer")
            }
            let now = self.configuration.clock.now()
            let snapshot = self.media?.loadRequestSnapshot(at: now)
            self.stopApp(mediaIdleReason: "INTERRUPTED")
            self.broadcastReceiverStatus()
            return TransferredSession(appId: running.appId, loadRequest: snapshot)
        }.get()
    }

    /// Target side of a cloud transfer: the same app launched from the cloud (new session) and
    /// the same content loaded at the same position and play state.
    func attachTransferred(_ session: TransferredSession) async throws {
        let launched = eventLoop.scheduleTask(in: configuration.launchLatency) {
            self.launch(appId: session.appId, launchedFromCloud: true)
            if let request = session.loadRequest, self.app?.kind == .media {
                _ = self.load(request, queue: false, at: self.configuration.clock.now())
            }
            self.broadcastReceiverStatus()
        }
        try await launched.futureResult.get()
    }
}

/// A JSON-friendly snapshot of a device (`GET /devices/<id>/state`).
public struct SimulatedDeviceState: Sendable, Codable {
    public var id: String
    public var name: String
    public var host: String
    public var port: Int
    public var listening: Bool
    public var silenced: Bool
    public var connections: Int
    public var receiverStatus: ReceiverStatus
    public var mediaStatus: MediaStatus?
    public var counters: SimulatorCounters
    /// For a group's endpoint: the group.
    public var group: SimulatedGroupSummary?
    /// Ids of the groups this device is a member of.
    public var memberOf: [String]
    /// The group whose playback this member shows (its app, no media of its own).
    public var followedGroup: String?
    /// The DashCast receiver's state while it runs.
    public var dashCast: DashCastState?
    /// The Lovelace receiver's state while it runs (no refresh token).
    public var lovelace: LovelaceState?
    /// The page and display timeouts in force (seconds; absent: off).
    public var pageTimeout: Double?
    public var displayTimeout: Double?
}
