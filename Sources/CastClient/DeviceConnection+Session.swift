import CastProtocol
import NIOCore

/// What the device says about its session: messages are classified (`CastInbound`, pure), fed
/// to the session machine, and its actions run here (join or leave an app's transport, ask a
/// status, hand a snapshot upwards); plus the waiters of requests that complete on a later
/// message (an app's reply, an app that finished launching).
extension DeviceConnection {
    func dispatch(_ message: CastMessage) {
        switch CastInbound.classify(message, joinedTransport: session.joinedApp?.transportId) {
        case .receiverStatus(let status)?:
            parsedReceiverReply = (message.payload, status)
            run(session.receiverStatus(status, now: .now))
            resolveAppWaiters()
        case .mediaStatus(let status)?:
            run(session.mediaStatus(status, now: .now))
        case .queueItemIds(let ids)?:
            run(session.queueItemIds(ids))
        case .queueItems(let items)?:
            run(session.queueItems(items))
        case .queueChange(let change)?:
            run(session.queueChange(change))
        case .multizone(let parsed)?:
            run(session.multizone(parsed))
        case .appMessage(let namespace, let sourceID, let payload)?:
            if let index = replyWaiters.firstIndex(where: { $0.namespace == namespace }) {
                replyWaiters.remove(at: index).promise.succeed(payload)
            }
            emitEvent(.appMessage(namespace: namespace, sourceID: sourceID, payload: payload))
        case nil:
            return
        }
    }

    /// The device is a speaker group after all: follow its multizone status.
    func becomeGroup() {
        eventLoop.assertInEventLoop()
        run(session.becomeGroup())
    }

    func run(_ actions: [CastSessionMachine.Action]) {
        for action in actions {
            switch action {
            case .join(let transport, let askMedia):
                if let app = session.joinedApp {
                    logger.info("joined app session", metadata: ["cast.app": "\(app.appId)", "cast.session": "\(app.sessionId ?? "")"])
                }
                run(machine.connectEndpoint(transport))
                if askMedia {
                    _ = request(namespace: CastNamespace.media, destination: transport) {
                        .string(MediaRequest.getStatus(mediaSessionId: nil).json(requestId: $0))
                    }
                }
            case .leave(let transport):
                logger.info("app session ended", metadata: ["cast.transport": "\(transport)"])
                run(machine.closeEndpoint(transport))
            case .forget(let transport):
                logger.info("app session ended: the device closed its transport", metadata: ["cast.transport": "\(transport)"])
                machine.forgetEndpoint(transport)
            case .askReceiverStatus:
                _ = request(namespace: CastNamespace.receiver, destination: CastEndpoint.receiver) {
                    .string(ReceiverRequest.getStatus.json(requestId: $0))
                }
            case .askMultizoneStatus:
                _ = request(namespace: CastNamespace.multizone, destination: CastEndpoint.receiver) {
                    .string(MultizoneMessage.getStatus(requestId: $0).json())
                }
            case .publish(let snapshot):
                emitEvent(.snapshot(snapshot))
            case .askQueueItemIds(let transport, let mediaSessionId):
                askQueue(.queueGetItemIds(mediaSessionId: mediaSessionId), transport: transport, done: .itemIds)
            case .askQueueItems(let transport, let mediaSessionId, let ids):
                askQueue(.queueGetItems(mediaSessionId: mediaSessionId, itemIds: ids), transport: transport, done: .items(ids))
            }
        }
    }

    /// A queue request of the session machine: its answer arrives as a message (merged by the
    /// machine before this completes); success or failure, the machine hears that it ended.
    private func askQueue(_ message: MediaRequest, transport: String, done: CastSessionMachine.QueueRequest) {
        request(namespace: CastNamespace.media, destination: transport) { .string(message.json(requestId: $0)) }
            .assumeIsolated()
            .whenComplete { [self] result in
                if case .failure(let error) = result {
                    logger.debug("queue request failed", metadata: ["cast.request": "\(message.type)", "cast.error": "\(error)"])
                }
                run(session.queueRequestDone(done))
            }
    }

    // MARK: - Waiters

    /// Completes with the next message from the app on `namespace`, or fails after `timeout`.
    func nextAppMessage(namespace: String, timeout: Duration) -> EventLoopFuture<CastPayload> {
        eventLoop.assertInEventLoop()
        let promise = eventLoop.makePromise(of: CastPayload.self)
        nextWaiterID += 1
        let id = nextWaiterID
        replyWaiters.append((id, namespace, promise))
        eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(timeout.clampedNanoseconds)) { [self] in
            if let index = replyWaiters.firstIndex(where: { $0.id == id }) {
                replyWaiters.remove(at: index).promise.fail(CastError(.timeout, "the app sent no reply on \(namespace) in time"))
            }
        }
        return promise.futureResult
    }

    /// Completes when `appId` is running and joined; fails when the launch fails.
    func waitForApp(_ appId: String, launch: EventLoopFuture<CastMessage>) -> EventLoopFuture<ReceiverApplication> {
        eventLoop.assertInEventLoop()
        if let app = session.joinedApp, app.appId == appId { return eventLoop.makeSucceededFuture(app) }
        let promise = eventLoop.makePromise(of: ReceiverApplication.self)
        nextWaiterID += 1
        let id = nextWaiterID
        appWaiters.append((id, appId, promise))
        launch.assumeIsolated().whenComplete { [self] result in
            guard let index = appWaiters.firstIndex(where: { $0.id == id }) else { return }
            switch result {
            case .failure(let error):
                appWaiters.remove(at: index).promise.fail(error)
            case .success:
                if let app = session.joinedApp, app.appId == appId {
                    appWaiters.remove(at: index).promise.succeed(app)
                } else {
                    appWaiters.remove(at: index).promise.fail(
                        CastError(.launchError, "the device answered the launch but \(appId) is not running"))
                }
            }
        }
        return promise.futureResult
    }

    /// Waiters for an app that is now joined succeed.
    private func resolveAppWaiters() {
        guard let app = session.joinedApp, appWaiters.contains(where: { $0.appId == app.appId }) else { return }
        let ready = appWaiters.filter { $0.appId == app.appId }
        appWaiters.removeAll { $0.appId == app.appId }
        for waiter in ready { waiter.promise.succeed(app) }
    }

    func failWaiters(_ error: CastError) {
        let replies = replyWaiters
        replyWaiters.removeAll()
        for waiter in replies { waiter.promise.fail(error) }
        let apps = appWaiters
        appWaiters.removeAll()
        for waiter in apps { waiter.promise.fail(error) }
    }
}
