import Dispatch
import Foundation
import ServiceLifecycle
import Synchronization

/// SIGTERM and SIGINT, caught from the first line of `run` on. The service group catches them
/// only once it runs; before that (reading the configuration, building the parts: a few hundred
/// milliseconds on a busy machine) the kernel's default action killed the daemon with no orderly
/// end (Tests/lifecycle: a SIGTERM right after "starting" gave exit status -15). Here a signal
/// that comes early is remembered and shuts the group down gracefully as soon as it runs; one
/// that comes later does what the group's own handler did.
///
/// The sources live behind a `Mutex` too (they are made in `init` and only cancelled in
/// `deinit`); the triggered shutdown is the group's own, awaited by its `run()`.
final class ShutdownSignals: Sendable {
    private let state = Mutex<(requested: Bool, group: ServiceGroup?)>((false, nil))
    private let sources: Mutex<[any DispatchSourceSignal]>

    init(signals: [Int32] = [SIGTERM, SIGINT]) {
        // Ignored by the process, so that only the sources see them (as ServiceLifecycle does).
        for number in signals { signal(number, SIG_IGN) }
        sources = Mutex(signals.map { DispatchSource.makeSignalSource(signal: $0, queue: .global()) })
        sources.withLock { made in
            for source in made {
                source.setEventHandler { [weak self] in self?.received() }
                source.resume()
            }
        }
    }

    deinit {
        sources.withLock { made in
            for source in made { source.cancel() }
        }
    }

    /// True once a signal came.
    var requested: Bool { state.withLock { $0.requested } }

    /// The group to shut down on a signal; shut down at once when one came already.
    func attach(_ group: ServiceGroup) {
        let early = state.withLock { s -> Bool in
            s.group = group
            return s.requested
        }
        if early { Task { await group.triggerGracefulShutdown() } }
    }

    /// The group has ended (also keeps this object, and so its sources, alive until then).
    func detach() {
        state.withLock { $0.group = nil }
    }

    private func received() {
        let group = state.withLock { s -> ServiceGroup? in
            s.requested = true
            return s.group
        }
        if let group { Task { await group.triggerGracefulShutdown() } }
    }
}
