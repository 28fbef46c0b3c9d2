#!/usr/bin/env bash
# Where the bytes of the armv7 hcp-edge binary go: builds it unstripped (the tags and
# scripts/dist-gcflags.sh of `make dist`, without -s -w), reads every symbol with `go tool nm -size`, drops the
# zero-filled sections (.bss, .noptrbss: no bytes in the file) and sums the rest by module
# (or by package with BY=package). The stripped file also holds .gopclntab, which grows
# roughly with .text, so a module's share of the text is its share of most of the file.
#
#   scripts/size-breakdown.sh               # top 30 modules
#   BY=package TOP=60 scripts/size-breakdown.sh
#   GOARCH=arm64 scripts/size-breakdown.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
BY=${BY:-module}
TOP=${TOP:-30}
export CGO_ENABLED=0 GOOS=linux GOARCH=${GOARCH:-arm} GOARM=${GOARM:-7}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$GO" build -trimpath -tags "${TAGS-nethttpomithttp2}" $(bash scripts/dist-gcflags.sh) -o "$tmp/sym" ./cmd/hcp-edge
"$GO" build -trimpath -tags "${TAGS-nethttpomithttp2}" $(bash scripts/dist-gcflags.sh) -ldflags "-s -w$( [ "$GOARCH" = arm ] && echo ' -R 0x1000')" -o "$tmp/stripped" ./cmd/hcp-edge
echo "hcp-edge linux/$GOARCH${GOARM:+ GOARM=$GOARM}: stripped $(stat -c %s "$tmp/stripped") bytes"
if command -v readelf >/dev/null; then
  readelf -SW "$tmp/stripped" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 ~ /^\.(text|rodata|gopclntab|noptrdata|data)$/ {print $1, $5}' | while read -r s h; do printf "  section %-12s %10d bytes\n" "$s" "$((16#$h))"; done
  bss=$(readelf -SW "$tmp/sym" | awk '$2==".bss" {print $4}')
else
  bss=ffffffff
fi
"$GO" tool nm -size "$tmp/sym" | awk -v bss="$bss" -v by="$BY" '
  function hex(s,  i, c, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c } return v }
  BEGIN { lim = hex(bss) }
  NF >= 4 {
    if (hex($1) >= lim) next                       # .bss/.noptrbss: not in the file
    name = $4; for (i = 5; i <= NF; i++) name = name " " $i
    sub(/^go:itab\./, "", name); sub(/^type:\.?[a-z]*\./, "", name); sub(/^type:/, "", name)
    gsub(/^[*\[\]0-9]+/, "", name)
    if (name ~ /^go:/ || name ~ /^runtime\./ && 0) { pkg = name } 
    slash = match(name, /\/[^\/]*$/)
    if (slash) { rest = substr(name, slash + 1); split(rest, b, "."); pkg = substr(name, 1, slash) b[1] }
    else { split(name, b, "."); pkg = b[1] }
    if (pkg ~ /^go:/) pkg = "go: (func metadata, strings)"
    key = pkg
    if (by == "module") {
      n = split(pkg, p, "/")
      if (pkg ~ /^(github\.com|go\.bug\.st|go\.etcd\.io|go\.yaml\.in|golang\.org|periph\.io|google\.golang\.org|gopkg\.in)\//) {
        if (pkg ~ /^github\.com\/hcp-edge\/hcp-edge\//) key = p[1] "/" p[2] "/" p[3] "/" p[4]
        else if (pkg ~ /^(github\.com|golang\.org|periph\.io)\//) key = p[1] "/" p[2] "/" p[3]
        else key = p[1] "/" p[2]
      } else if (pkg ~ /^vendor\//) key = "std (vendor/" p[2] "/" p[3] "/" p[4] ")"
      else if (pkg ~ /^(main|go:)/) key = pkg
      else key = "std " p[1]
    }
    s[key] += $2; total += $2
  }
  END { for (k in s) printf "%10d %5.1f%%  %s\n", s[k], 100 * s[k] / total, k; printf "%10d %5.1f%%  %s\n", total, 100, "(total of symbols in the file)" }
' | sort -rn | head -n "$((TOP + 1))"
