// EntitledConfig module.
