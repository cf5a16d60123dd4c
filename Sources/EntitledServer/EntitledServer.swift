// EntitledServer module.
