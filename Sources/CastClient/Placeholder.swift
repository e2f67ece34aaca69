// CastClient — placeholder until the module lands.
enum CastClientPlaceholder {}
