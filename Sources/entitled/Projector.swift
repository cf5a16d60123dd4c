import EntitledConfig
import EntitledServer
import Storage

/// The projector the server, `entitled rebuild` and `entitled migrate` compute projections with:
/// the entitlement engine with the configuration's policy. Rebuild must use the server's policy,
/// or it would report every customer as different.
func makeProjector(configuration: Configuration) -> EngineProjector {
    EngineProjector(policy: FactMapper.policy(for: configuration))
}
