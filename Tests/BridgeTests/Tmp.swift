import Testing
@Test func tmp() {}
