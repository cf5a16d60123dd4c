# Sourced by the scripts: makes Homebrew's keg-only libraries visible to pkg-config on macOS.
if [ "$(uname -s)" = "Darwin" ] && command -v brew >/dev/null 2>&1; then
  for keg in openssl@3 sqlite libpq; do
    prefix="$(brew --prefix "$keg" 2>/dev/null || true)"
    [ -n "$prefix" ] && export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  done
  pg="$(brew --prefix postgresql@16 2>/dev/null || true)"
  [ -n "$pg" ] && export PATH="$pg/bin:$PATH"
fi
