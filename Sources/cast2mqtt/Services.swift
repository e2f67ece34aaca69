import Bridge
import CastClient
import Discovery
import Logging
import MQTT
import NIOCore
import ServiceLifecycle
import StageTrace
import Synchronization

// The daemon's services (docs/architecture.md, "The daemon"). `Cast2MQTT.Run` puts them in one
// `ServiceGroup` in the order web, MQTT, consumer, discovery: the group starts them together and,
// on SIGTERM, shuts them down one after the other in the reverse order — discovery first, then
// the consumer (which answers what waits, publishes every device `offline` and closes the Cast
// clients politely), then MQTT (the bridge's own `offline`, then a clean disconnect), the web page
// last. The dependencies are also explicit, so that the order holds when the group is cancelled
// instead (a service failed): the consumer's final steps wait for discovery to have stopped, and
// MQTT's shutdown waits for the consumer to have finished.

/// Opens once; every waiter (before or after) then goes on. Not cancellable: a service that
/// depends on another waits for it to end even while the group is being cancelled (the one it
/// waits for ends by itself: its own cancellation ends it).
final class Latch: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Tasks waiting now (tests).
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let open = state.withLock { s -> Bool in
                if !s.open { s.waiters.append(waiter) }
                return s.open
            }
            if open { waiter.resume() }
        }
    }
}

/// The broker connection: subscribed (before it starts), connected and reconnecting while the
/// daemon runs; at the end — after the consumer has finished — the bridge's retained `offline`
/// (its last will, sent as a final message) and a clean disconnect, which awaits the network
/// thread's end.
struct MQTTService: Service {
    let mqtt: MosquittoClient
    /// The bridge's `offline` (the last will's topic and payload).
    let finalMessage: MQTTMessage
    /// The consumer's end: its final publications go out before the connection closes.
    let after: Latch

    func run() async throws {
        try mqtt.start()
        try? await gracefulShutdown()
        await after.wait()
        await mqtt.shutdown(finalMessage: finalMessage)
    }
}

/// Discovery's merged device events into the input queue, from `start()` until the daemon shuts
/// down (it stops first: nothing new reaches the consumer's final steps).
struct DiscoveryService: Service {
    let discovery: DeviceDiscovery
    let inputs: InputQueue
    /// Opened once discovery has stopped.
    let stopped = Latch()

    func run() async {
        defer { stopped.open() }
        discovery.start()
        await withGracefulShutdownHandler {
            for await event in discovery.events { inputs.push(.discovery(event)) }
        } onGracefulShutdown: {
            discovery.stop()
        }
        // Cancelled: the stream's reader ended without stop().
        discovery.stop()
    }
}

/// The core loop: the `Consumer` takes every input in order on its event loop (with the
/// one-second tick) until shutdown; then, once discovery has stopped, it answers what waits,
/// publishes every device `offline`, writes the state files and closes the Cast clients politely.
struct ConsumerService: Service {
    let runtime: BridgeRuntime
    let coreLoop: any EventLoop
    let consumer: NIOLoopBoundBox<Consumer>
    /// Discovery's end, awaited before the final steps.
    let after: Latch
    /// Opened when the final steps are done (MQTT waits for it).
    let finished = Latch()

    func run() async throws {
        defer { finished.open() }
        let (inputs, logger, consumer, coreLoop) = (runtime.inputs, runtime.logger, self.consumer, self.coreLoop)
        let drained = try await coreLoop.submit {
            consumer.value.startYield()
            return consumer.value.finished.futureResult
        }.get()
        inputs.consume { coreLoop.execute { consumer.value.drain() } }
        let ticker = coreLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            inputs.push(.bridge(.tick))
        }
        let instanceMode = runtime.configuration.instance != nil
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                _ = try? await drained.get()
            } onGracefulShutdown: {
                // Instance mode, SIGTERM: the devices are handed over first (bounded); the
                // consumer ends the queue when that is done.
                if instanceMode {
                    coreLoop.execute { consumer.value.beginHandover() }
                } else {
                    inputs.finish()
                }
            }
        } onCancel: {
            inputs.finish()
        }
        ticker.cancel()
        logger.info("shutting down")
        await after.wait()
        let final: (clients: [CastDeviceClient], closing: [EventLoopFuture<Void>]) = (try? await coreLoop.submit {
            consumer.value.notifier.notify("STOPPING=1")
            return consumer.value.shutDown()
        }.get()) ?? ([], [])
        await withTaskGroup(of: Void.self) { closes in
            for client in final.clients { closes.addTask { await client.shutdown() } }
        }
        for close in final.closing { try? await close.get() }
    }
}

/// The web page, `/metrics` and `/healthz` (RuntimeObservers.swift), on their own loop. Returns at
/// once when the page is off or its address cannot be bound (the bridge goes on without it:
/// the group ignores its end); shut down last, and then at once: the server is cancelled, so an
/// open page (its WebSocket) cannot hold the daemon's exit up.
///
/// The server runs in a task of its own that does not see the group's graceful shutdown, and is
/// awaited to its end: Hummingbird answers a graceful shutdown with an unstructured task that
/// quiesces the server later, and that task outlived `run()` — it completed a promise on the
/// page's event loop after `Daemon.closeLoops()` had shut that loop down (SwiftNIO's "Cannot
/// schedule tasks on an EventLoop that has already shut down", a crash in a future SwiftNIO;
/// Tests/lifecycle). Cancelled instead, the server ends inside the awaited task.
struct WebService: Service {
    let observers: RuntimeObservers
    let group: any EventLoopGroup

    func run() async {
        let (observers, group) = (self.observers, self.group)
        // Detached: no task-local graceful-shutdown handler reaches Hummingbird; our own
        // cancellation (at shutdown, or when the group is cancelled) is passed on.
        let server = Task.detached { await observers.run(group: group) }
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await server.value }
                tasks.addTask { try? await gracefulShutdown() }
                await tasks.next()
                server.cancel()
                tasks.cancelAll()
                await tasks.waitForAll()
            }
        } onCancel: {
            server.cancel()
        }
    }
}
