import Synchronization

// Waiting, without polling, for the network thread to change the shared state (shutdown).
extension MosquittoConnection {
    /// Changes `shared` and resumes every task waiting for a change of it (outside the lock).
    func changeShared(_ body: (inout Shared) -> Void) {
        let waiters = shared.withLock { s -> [CheckedContinuation<Void, Never>] in
            body(&s)
            guard !s.waiters.isEmpty else { return [] }
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Resumes every waiting task without a change (their deadline passed: they look again).
    func wakeWaiters() { changeShared { _ in } }

    /// Waits until `done` holds for the shared state, rechecking after every change the network
    /// thread makes; false when `deadline` passes first. No polling: the thread resumes us.
    func waitForShared(until deadline: ContinuousClock.Instant, _ done: (Shared) -> Bool) async -> Bool {
        let clock = ContinuousClock()
        return await withTaskGroup(of: Void.self) { group in
            // At the deadline the waiters are woken to look once more (and give up).
            group.addTask {
                try? await Task.sleep(until: deadline, clock: clock)
                self.wakeWaiters()
            }
            defer { group.cancelAll() }
            while true {
                let met = shared.withLock { done($0) }
                if met { return true }
                if clock.now >= deadline { return false }
                await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                    let registered = shared.withLock { s -> Bool in
                        guard !done(s), clock.now < deadline else { return false }
                        s.waiters.append(waiter)
                        return true
                    }
                    if !registered { waiter.resume() }
                }
            }
        }
    }
}
