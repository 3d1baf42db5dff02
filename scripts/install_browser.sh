#!/usr/bin/env bash
# Install Debian's Chromium and ChromeDriver for the browser test (idempotent, quiet).
# Playwright drives this system browser; `playwright install` (a download) is never used.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-noto-cjk >/dev/null
/usr/bin/chromium --version
