import EntitledConfig
import EntitledServer
import Foundation
import Storage

/// The fast paths' switch (`ENTITLED_FAST_PATHS`), read from the environment once, here at the
/// composition root, for every command.
let fastPaths = FastPaths(environment: ProcessInfo.processInfo.environment)

/// The projector the server, `entitled rebuild` and `entitled migrate` compute projections with:
/// the entitlement engine with the configuration's policy. Rebuild must use the server's policy,
/// or it would report every customer as different.
func makeProjector(configuration: Configuration) -> EngineProjector {
    EngineProjector(policy: FactMapper.policy(for: configuration), cache: fastPaths.projectionCache())
}
