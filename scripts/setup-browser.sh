#!/usr/bin/env bash
# Headless Chromium and its WebDriver for the HTML report's browser test (tests/test_report_browser.py)
# and scripts/report_screenshot.py: Debian's chromium and chromium-driver. Root only.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-browser: needs root (apt-get); install chromium and chromium-driver" >&2
  exit 1
fi
echo "setup-browser: installing chromium and chromium-driver"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
