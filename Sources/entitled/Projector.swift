import Storage

/// The projector `entitled rebuild` (and later the server) computes projections with.
///
/// For now the storage module's ``BasicProjector``; to be replaced by the entitlement engine.
func makeDefaultProjector() -> any Projector {
    BasicProjector()
}
