// AppStoreTesting module.
