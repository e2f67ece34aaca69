// Discovery — placeholder until the module lands.
enum DiscoveryPlaceholder {}
