#!/usr/bin/env bash
# Makes every runtime of `npm run test:runtimes` available; idempotent, fast when all is there.
#   - Deno, Bun and workerd are npm devDependencies (run `npm ci` first). Their postinstall
#     scripts put the native binary in place; when npm skipped them (--ignore-scripts, or an npm
#     that does not run dependency scripts) they are run here — offline, since each copies the
#     binary from its already installed platform package (@deno/*, @oven/bun-*, @cloudflare/workerd-*).
#   - Chromium and Firefox ESR come from apt (Debian/Ubuntu), only when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[install-runtimes] %s\n' "$*"; }
works() { "$@" --version >/dev/null 2>&1; }

if [[ ! -d node_modules ]]; then
  log "node_modules is missing: run npm ci (or npm install) first" >&2
  exit 1
fi

# --- npm-provided runtimes --------------------------------------------------------------------
ensure_npm_runtime() { # name, package dir, install script
  local name=$1 dir=$2 script=$3
  if works "node_modules/.bin/$name"; then return; fi
  if [[ ! -f "$dir/$script" ]]; then
    log "$name: $dir is not installed (is it in devDependencies? run npm ci)" >&2
    return 1
  fi
  log "$name: running its skipped postinstall ($dir/$script)"
  (cd "$dir" && node "$script") || true
  works "node_modules/.bin/$name"
}
ensure_npm_runtime deno node_modules/deno install.cjs
ensure_npm_runtime workerd node_modules/workerd install.js
if ! ensure_npm_runtime bun node_modules/bun install.js; then
  # Last resort: put the platform package's binary where the bun shim expects it.
  for exe in node_modules/@oven/bun-linux-x64/bin/bun node_modules/@oven/bun-linux-x64-baseline/bin/bun \
             node_modules/@oven/bun-linux-aarch64/bin/bun; do
    if [[ -x "$exe" ]] && "$exe" --version >/dev/null 2>&1; then
      log "bun: using $exe"
      cp "$exe" node_modules/bun/bin/bun.exe
      break
    fi
  done
  works node_modules/.bin/bun || { log "bun: no working binary (node_modules/.bin/bun --version fails)" >&2; exit 1; }
fi

# --- browsers from apt ------------------------------------------------------------------------
have_chromium() { command -v chromium >/dev/null 2>&1 || [[ -x /usr/lib/chromium/chromium ]]; }
have_firefox() { [[ -x /usr/lib/firefox-esr/firefox-esr ]] || command -v firefox-esr >/dev/null 2>&1; }
missing=()
have_chromium || missing+=(chromium)
have_firefox || missing+=(firefox-esr)
if ((${#missing[@]})); then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { log "need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
  "${sudo[@]}" apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi

log "deno $(node_modules/.bin/deno --version | head -1 | cut -d' ' -f2), bun $(node_modules/.bin/bun --version)," \
  "$(node_modules/.bin/workerd --version), $( (chromium --version 2>/dev/null || /usr/lib/chromium/chromium --version) | head -1)," \
  "$( (/usr/lib/firefox-esr/firefox-esr --version || firefox-esr --version) 2>/dev/null | head -1)"
