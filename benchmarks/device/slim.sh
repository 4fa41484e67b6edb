#!/usr/bin/env bash
# The device tool sends the whole working tree and refuses one past 64 MiB (counted in disk blocks); the committed
# measurements under docs/ grow past that, and no device command reads them. Before a device call:
#   bash benchmarks/device/slim.sh         # deletes the tracked files under docs/ of more than 400 kB from the tree
# and after it (also after an interrupted session: git has them all):
#   bash benchmarks/device/slim.sh restore # git checkout of exactly those files
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
if [ "${1:-}" = restore ]; then
  gone=$(git ls-files --deleted docs)
  [ -z "$gone" ] || git checkout -- $gone
  echo "restored; git status --short docs: $(git status --short docs | grep -c '^ D' || true) deleted"
else
  big=$(git ls-files docs | while read -r f; do [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 400000 ] && echo "$f"; done || true)
  [ -z "$big" ] || rm -f $big
  echo "removed $(echo "$big" | grep -c . || true) files; the tree now: $( (git ls-files; git ls-files -o --exclude-standard) \
    | sort -u | while read -r f; do [ -e "$f" ] && echo "$f"; done | xargs du -ck 2>/dev/null | tail -1 | cut -f1) KiB"
fi
