import Bridge
import CastClient
import CastProtocol
import Foundation
import Logging
import MQTT
import NIOCore
import StageTrace

/// One turn of the consumer: the inputs that wait (at most `limit`, or until `budget` is spent),
/// then one part of the core's background work when some is owed.
enum ConsumerTurn {
    enum End: Equatable {
        /// The queue is empty and marked the consumer idle: a push schedules it again.
        case idle
        /// More waits (inputs, or a part): the consumer must schedule its next turn itself.
        case more
        /// The queue ended and everything in it was taken.
        case finished
    }

    static func run(inputs: InputQueue, limit: Int, budget: Duration, partOwed: () -> Bool,
                    take: (RuntimeInput) -> Void, part: () -> Void) -> End {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: budget)
        // Inputs may wait after this turn unless the queue said it is empty.
        var more = true
        turn: for _ in 0..<limit {
            // With a part owed the queue keeps the consumer scheduled: it comes back by itself.
            switch inputs.next(stayAwake: partOwed()) {
            case .input(let input): take(input)
            case .idle:
                more = false
                break turn
            case .finished: return .finished
            }
            if clock.now >= deadline { break }
        }
        if partOwed() {
            part()
            // Told to stay awake, the queue did not mark the consumer idle: come back at least once.
            more = true
        }
        return more ? .more : .idle
    }
}

/// The consumer: everything the core's event loop owns — the core, the device table with the
/// Cast clients (`DeviceFactsRunner`),
/// the state files' pacing, the systemd watchdog. It takes every input from the `InputQueue` in
/// order, on that loop only (a `NIOLoopBoundBox` holds it), so per-device state needs no locks;
/// it publishes what the core returns (written to the broker at once when the MQTT thread is
/// idle) and hands its operations to the devices' clients — most of them on this same loop, so a
/// command's Cast message is written in the same turn that took the command, and a device's
/// status reaches the core in the turn that read it.
final class Consumer {
    let runtime: BridgeRuntime
    let loop: any EventLoop
    let mqtt: MosquittoClient
    let notifier: SystemdNotifier
    let sessions: SessionFile
    let published: PublishedFile
    let keeps: KeepFile
    var core: BridgeCore
    /// The daemon's device table — `eureka_info` facts, held devices, groups that moved, the
    /// Cast clients — and the fleet that makes the clients (DeviceFactsRunner.swift).
    var facts: DeviceFactsRunner
    var watchdog: WatchdogPacer
    var ready = false
    /// False while the broker is away: retained state is not handed to libmosquitto to queue
    /// then (the reconnect republishes the current state anyway).
    var mqttUp = false
    var skippedWhileDown = 0
    var sessionsPacer = SavePacer()
    var publishedPacer = SavePacer()
    var keepsPacer = SavePacer()
    let homeAssistantLogger = Logger.component("homeassistant")
    /// The polite closes of clients the core forgot and not done yet, awaited at shutdown.
    var closing: [Int: EventLoopFuture<Void>] = [:]
    var nextClose = 0
    /// Completed when the queue has ended and everything in it was taken.
    let finished: EventLoopPromise<Void>
    let testHooks = ProcessInfo.processInfo.environment["CAST2MQTT_TEST_HOOKS"] == "1"
    /// Instance mode: when the previous input was taken (a gap longer than the MQTT keepalive
    /// means the process was frozen: mqtt-api.md §10) and whether SIGTERM's handover is under way.
    var lastTaken: ContinuousClock.Instant?
    var stopping = false
    var handoverEnded = false
    /// Resumes `drain` after the loop's next poll (LoopYield.swift).
    var yield: LoopYield?
    /// The core left work for later (`BridgeOutput.moreWork`): `drain` gives it one `.resume`
    /// a turn, after the turn's inputs.
    var partOwed = false
    var draining = false

    init(runtime: BridgeRuntime, loop: any EventLoop, mqtt: MosquittoClient, notifier: SystemdNotifier, core: BridgeCore,
         facts: DeviceFactsRunner, sessions: SessionFile, published: PublishedFile, keeps: KeepFile) {
        self.runtime = runtime
        self.loop = loop
        self.mqtt = mqtt
        self.notifier = notifier
        self.core = core
        self.facts = facts
        self.sessions = sessions
        self.published = published
        self.keeps = keeps
        self.watchdog = WatchdogPacer(notifier: notifier)
        self.finished = loop.makePromise(of: Void.self)
    }

    var logger: Logger { runtime.logger }

    /// Inputs taken in one turn before the loop gets back to its sockets, and the time one turn
    /// may take: the loop also serves devices, whose PINGs and replies wait meanwhile (a republish
    /// of 10 000 discovery configs in one turn held them for seconds).
    static let inputsPerTurn = 256
    static let turnBudget: Duration = .milliseconds(5)

    /// Takes what waits (scheduled by the queue on this loop when an input finds it idle), then
    /// one part of the core's background work (a republish in parts) when some is owed: the
    /// inputs come first, so a command, or the answer of a device it waits for, is never behind
    /// more than one part; and every turn does one part, so the republish goes on under load.
    func drain() {
        loop.assertInEventLoop()
        draining = true
        defer { draining = false }
        let end = ConsumerTurn.run(inputs: runtime.inputs, limit: Self.inputsPerTurn, budget: Self.turnBudget,
                                   partOwed: { self.partOwed }, take: take) {
            self.partOwed = false
            self.apply(.resume)
        }
        switch end {
        case .idle: return
        case .finished: finished.succeed()
        case .more:
            // The rest in the next turn, after the loop's I/O (an `execute` would run in this
            // same tick, before any socket is read: LoopYield.swift).
            if yield?.arm() != true { loop.assumeIsolated().execute { self.drain() } }
        }
    }

    /// Registers the pipe that lets `drain` resume after the loop's sockets (at start, on the loop).
    func startYield() {
        let yield = LoopYield(loop: loop) { [weak self] in self?.drain() }
        yield.start()
        self.yield = yield
    }

    func take(_ next: RuntimeInput) {
        defer { watchdog.pingIfDue() }
        if runtime.configuration.instance != nil { noticeFreeze() }
        if StageTrace.enabled {
            if case .bridge(.mqttMessage) = next { StageTrace.mark(.commandTaken) }
            if case .bridge(.device) = next { StageTrace.mark(.snapshotTaken) }
        }
        runtime.observers.turned()
        let bridgeInput: BridgeInput
        switch next {
        case .discovery(let event):
            let remembered = core.publishedSnapshot
            for input in facts.discovered(event, known: { remembered.devices[$0] != nil }) { apply(input) }
            return
        case .eureka(let host, let result):
            for input in facts.answered(host: host, result) { apply(input) }
            return
        case .mqttDisconnected:
            mqttUp = false
            return
        case .webCommand(let topic, let payload):
            // Instance mode: the page's command goes through the broker, like any client's.
            publish(Publication(topic: topic, payload: payload, retain: false))
            return
        case .bridge(.mqttMessage(let topic, let payload, _, _))
            where testHooks && topic == "\(core.topics.base)/bridge/request/debug_stall":
            // Tests only: block this loop as a wedge would (the watchdog pings must stop).
            let seconds = Double(String(decoding: payload.prefix(8), as: UTF8.self)) ?? 5
            logger.warning("test hook: stalling the consumer loop", metadata: ["seconds": "\(seconds)"])
            usleep(UInt32(Duration.seconds(clamping: min(seconds, 60)).clampedNanoseconds / 1000))
            return
        case .bridge(let value):
            bridgeInput = value
        }
        apply(bridgeInput)
        var more: [BridgeInput] = []
        if case .device(let id, let snapshot) = bridgeInput { more = facts.snapshot(id, snapshot) }
        if case .tick = bridgeInput { more = facts.tick() }
        for input in more { apply(input) }
    }

    /// One bridge input through the core; its output published, its operations started.
    func apply(_ bridgeInput: BridgeInput) {
        if case .mqttConnected = bridgeInput { mqttConnected() }
        if case .tick = bridgeInput {
            core.inputOverload = runtime.overloadCounts
            runtime.observers.tick(core.gauges)
        }
        let now = Date()
        StageTrace.mark(.coreStart)
        let output = core.handle(bridgeInput, now: now)
        StageTrace.mark(.coreEnd)
        runtime.observers.applied(output, now: now)
        for line in output.logs { logger.info("\(line)") }
        for line in output.debugLogs { logger.debug("\(line)") }
        for line in output.homeAssistantLogs { homeAssistantLogger.info("\(line)") }
        if let levels = output.logLevels { LogControl.shared.apply(levels) }
        // What answers the input leaves first: a device's status is published before the Cast
        // requests it leads to are written, a command's Cast message is written before the
        // publications it caused (the two go to different peers; neither waits for the other).
        if case .device = bridgeInput {
            for publication in output.publications { publish(publication) }
            for operation in output.operations { start(operation) }
        } else {
            for operation in output.operations { start(operation) }
            // A republish of everything (after a connect, or Home Assistant's birth) is handed
            // over in bulk: held and fed as the broker acknowledges, so that the responses and
            // states published meanwhile do not queue behind it (MQTT/BulkPublisher.swift).
            // Not in instance mode: the gate decides on ownership when the core's output is
            // made, and a device handed over meanwhile must not have its held topics land after
            // its new owner's.
            let bulk = output.republish && runtime.configuration.instance == nil
            for publication in output.publications { publish(publication, bulk: bulk && publication.retain) }
        }
        // The rest of the work in later turns, after their inputs (the core's republish in parts).
        if output.moreWork {
            partOwed = true
            // Outside a turn (the handover's steps): a turn must come for it.
            if !draining { loop.assumeIsolated().execute { self.drain() } }
        }
        for id in output.forgotten { track(facts.drop(id)) }
        for id in output.release { track(facts.release(id)) }
        for id in output.connect { facts.connect(id) }
        if stopping, output.handedOver { endHandover("every device is handed over") }
        if output.sessionsChanged { sessionsPacer.changed() }
        if output.publishedChanged { publishedPacer.changed() }
        if output.keepsChanged { keepsPacer.changed() }
        saveState()
    }

    /// A polite close under way, awaited at shutdown.
    private func track(_ close: EventLoopFuture<Void>?) {
        guard let close else { return }
        nextClose += 1
        let key = nextClose
        closing[key] = close
        close.hop(to: loop).assumeIsolated().whenComplete { [self] _ in closing.removeValue(forKey: key) }
    }

    /// Instance mode: the ticker pushes an input every second, so a gap between two inputs longer
    /// than the MQTT keepalive means the process was frozen (SIGSTOP, a suspended VM): the broker
    /// has probably fired our will and another instance may own our devices now. Nothing is
    /// published for a device, and no command runs, until its claim is confirmed again.
    private func noticeFreeze() {
        let now = ContinuousClock.now
        defer { lastTaken = now }
        guard let last = lastTaken else { return }
        let gap = now - last
        guard gap > .seconds(runtime.configuration.mqtt.keepalive) else { return }
        logger.warning("the process was frozen; holding every device until its claim is confirmed",
                       metadata: ["freeze.seconds": "\(gap.components.seconds)"])
        apply(.instanceResumed(gap: gap / .seconds(1)))
    }

    /// SIGTERM in instance mode: say `stopping` and wait (at most `handoverBound`) until the other
    /// instances have taken this one's devices; then the queue ends and the usual shutdown runs.
    func beginHandover() {
        guard !stopping else { return }
        stopping = true
        logger.info("stopping: handing the devices over to the other instances")
        apply(.instanceStop)
        loop.assumeIsolated().scheduleTask(in: Self.handoverBound) { [self] in endHandover("the handover took too long") }
    }

    /// At most this long between `stopping` and the end of the queue.
    static let handoverBound = TimeAmount.seconds(5)

    private func endHandover(_ why: String) {
        guard stopping, !handoverEnded else { return }
        handoverEnded = true
        logger.info("handover done", metadata: ["handover.end": "\(why)"])
        runtime.inputs.finish()
    }

    private func mqttConnected() {
        mqttUp = true
        core.broker = mqtt.currentBroker
        if skippedWhileDown > 0 {
            logger.info("broker back; republishing the current state", metadata: ["mqtt.skipped_while_down": "\(skippedWhileDown)"])
            skippedWhileDown = 0
        }
        if !ready {
            ready = true
            notifier.notify("READY=1")
        }
    }

    /// Writes the state files that changed, paced (`SavePacer`); `force` at shutdown.
    func saveState(force: Bool = false) {
        let now = ContinuousClock.now
        if sessionsPacer.take(now: now, force: force) { sessions.save(core.sessionSnapshot()) }
        if publishedPacer.take(now: now, force: force) { published.save(core.publishedSnapshot) }
        if keepsPacer.take(now: now, force: force) { keeps.save(core.keepSnapshot) }
    }

    /// Hands an operation to its device's client; its completion comes back through the queue,
    /// exactly once.
    func start(_ operation: CastOperation) {
        let inputs = runtime.inputs
        let (device, token) = (operation.deviceID, operation.token)
        guard let client = facts.client(device) else {
            inputs.push(.bridge(.operationCompleted(device, token, .failure(BridgeError(.unknownDevice, "the device is not known")))))
            return
        }
        let (observers, kind, started) = (runtime.observers, operation.kind, ContinuousClock.now)
        OperationDispatch.dispatch(operation, to: client) { result in
            observers.castRequest(kind, started: started, ok: (try? result.get()) != nil)
            inputs.push(.bridge(.operationCompleted(device, token, result)))
        }
    }

    func publish(_ p: Publication, bulk: Bool = false) {
        runtime.observers.tee(p)
        // A clear (empty retained payload) is always handed over: the core has already
        // forgotten the topic and would not republish it.
        if !mqttUp, p.retain, !p.payload.isEmpty {
            skippedWhileDown += 1
            return
        }
        let message = MQTTMessage(topic: p.topic, payload: p.payload, qos: Adapt.qos(p.qos ?? runtime.configuration.mqtt.qos),
                                  retain: p.retain, correlationData: p.correlationData)
        do {
            if bulk, !p.payload.isEmpty { try mqtt.publishBulk(message) } else { try mqtt.publish(message) }
            runtime.observers.sent(p)
        } catch {
            logger.warning("publish failed", metadata: ["mqtt.topic": "\(p.topic)", "mqtt.error": "\(error)"])
        }
    }

    /// SIGTERM: every waiting command is answered, every device goes `offline`, the state files
    /// are written. Returns the clients to close and the closes under way.
    func shutDown() -> (clients: [CastDeviceClient], closing: [EventLoopFuture<Void>]) {
        let final = core.shutdown(now: Date())
        for publication in final.publications where publication.topic != core.lastWill.topic { publish(publication) }
        if final.sessionsChanged { sessionsPacer.changed() }
        if final.publishedChanged { publishedPacer.changed() }
        if final.keepsChanged { keepsPacer.changed() }
        saveState(force: true)
        yield?.stop()
        return (facts.takeClients(), Array(closing.values))
    }
}
