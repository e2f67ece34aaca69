import Testing

@testable import cast2mqtt

/// The services' dependency edges (Services.swift): a `Latch` lets every waiter go once opened,
/// whether it came before or after.
@Suite(.timeLimit(.minutes(1))) struct LatchTests {
    @Test func waitersBeforeAndAfterTheOpeningGoOn() async {
        let latch = Latch()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { await latch.wait() } }
            // All three are waiting (a fact, not a pause); then the latch opens for all of them.
            while latch.waiterCount < 3 { await Task.yield() }
            latch.open()
            await group.waitForAll()
        }
        #expect(latch.waiterCount == 0)
        // After the opening, a wait returns at once, also after a second opening.
        await latch.wait()
        latch.open()
        await latch.wait()
    }
}
