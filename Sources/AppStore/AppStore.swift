// AppStore module.
