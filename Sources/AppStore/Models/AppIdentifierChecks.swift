// Which identifiers each signed payload must carry, as Apple's libraries check them: a
// notification names its bundle and (in Production) its app; a transaction its bundle; renewal
// info neither (only its environment is checked); an app transaction both.

extension ResponseBodyV2DecodedPayload: DeclaresAppIdentifierChecks {
    public static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
}

extension JWSTransactionDecodedPayload: DeclaresAppIdentifierChecks {
    public static var appIdentifierChecks: AppIdentifierChecks { [.bundleId] }
}

extension JWSRenewalInfoDecodedPayload: DeclaresAppIdentifierChecks {
    public static var appIdentifierChecks: AppIdentifierChecks { [] }
}

extension AppTransaction: DeclaresAppIdentifierChecks {
    public static var appIdentifierChecks: AppIdentifierChecks { [.bundleId, .appAppleId] }
}
