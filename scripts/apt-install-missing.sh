#!/bin/sh
# Install the Debian packages given that are not installed yet: apt-get
# update + install, only as root, only when something is missing.
# Usage: sh scripts/apt-install-missing.sh TAG PKG...   (TAG prefixes messages)
# Exit 0 when all are installed (or now are), 1 when some are missing.
tag=$1
shift
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "[$tag] missing Debian packages:$missing (run as root, or install them)" >&2
  exit 1
fi
echo "[$tag] installing:$missing" >&2
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null && exit 0
echo "[$tag] apt-get install failed for:$missing" >&2
exit 1
