// Entitlements module.
