import Testing

@Test func BridgePlaceholder() {}
