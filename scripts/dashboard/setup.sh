#!/usr/bin/env bash
# Installs what the dashboard's browser test drives: Debian's Chromium and its
# WebDriver server (chromium-driver). Does nothing when both are present.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)
echo "dashboard/setup.sh: installing chromium and chromium-driver (Debian packages)" >&2
"${SUDO[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq chromium chromium-driver fonts-dejavu-core >/dev/null
