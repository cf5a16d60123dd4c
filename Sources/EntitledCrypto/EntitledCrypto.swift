// EntitledCrypto module.
