#!/usr/bin/env bash
# Render a study report to PNG with headless Chromium: what a reader sees on the first screen.
#
#   report/screenshot.sh [REPORT_HTML] [OUT_PNG] [WIDTH] [HEIGHT]
#
# Defaults: report/report.html, report/report-first-screen.png, 1400 x 1000 (a laptop screen). Give a larger
# HEIGHT (e.g. 6000) for the whole page. Needs Chromium (Debian: apt-get install -y chromium) or Chrome; set
# CHROMIUM to its path if it is not on the PATH. The report is self-contained, so nothing is fetched. Scrollbars
# are drawn, as a reader sees them: a table wider than the page shows its own scrollbar.
# A committed result set renders again without a GPU with report/rerender.py (its docstring has the commands).
set -euo pipefail

html=${1:-report/report.html}
out=${2:-report/report-first-screen.png}
width=${3:-1400}
height=${4:-1000}

browser=${CHROMIUM:-}
if [[ -z $browser ]]; then
  for candidate in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$candidate" >/dev/null 2>&1; then browser=$candidate; break; fi
  done
fi
if [[ -z $browser ]]; then
  echo "screenshot.sh: no Chromium found; install it (apt-get install -y chromium) or set CHROMIUM" >&2
  exit 1
fi
if [[ ! -f $html ]]; then
  echo "screenshot.sh: no report at $html (run the study first, e.g. the README's first try)" >&2
  exit 1
fi

mkdir -p "$(dirname "$out")"
url="file://$(cd "$(dirname "$html")" && pwd)/$(basename "$html")"
# --no-sandbox: Chromium refuses to run as root otherwise (containers, CI); the page is a local file.
"$browser" --headless --no-sandbox --disable-gpu --window-size="$width,$height" \
  --screenshot="$out" "$url" >/dev/null 2>&1
test -s "$out" || { echo "screenshot.sh: Chromium wrote no $out" >&2; exit 1; }
echo "$out"
