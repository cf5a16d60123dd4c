import Entitlements
import HTTPServer

extension API {
    /// What a customer answer merges: the environment `?environment=` names, else the grant environments.
    func answerContext(_ request: Request, now: Int64) throws -> EvaluationContext {
        guard request.query["environment"] != nil else {
            return EvaluationContext(policy: customerPolicy, environments: grantEnvironments, now: now)
        }
        return EvaluationContext(policy: customerPolicy, environment: try Self.environment(request), now: now)
    }
}
