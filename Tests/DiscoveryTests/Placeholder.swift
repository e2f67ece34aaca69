import Testing

@Test func DiscoveryPlaceholder() {}
