#!/usr/bin/env bash
# Cross-checks the ucx kernel against UCX's own ucx_perftest: tagged bandwidth (tag_bw) with the
# same UCX_TLS and message size, the two tools interleaved round by round so both see the same
# machine. Prints each tool's median GB/s (1e9 bytes/s) and acceltune/ucx_perftest per row.
#
#   tools/bench/ucx-crosscheck.sh [--acceltune PATH] [--rounds N] [--sizes "64K 1M 4M"] [--tls "shm tcp"]
set -euo pipefail

acceltune=${ACCELTUNE:-}
rounds=3
sizes="64K 1M 4M"
tls_list="shm tcp"
window=16
while [[ $# -gt 0 ]]; do
  case "$1" in
    --acceltune) acceltune=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --tls) tls_list=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    -h|--help) sed -n 2,6p "$0"; exit 0 ;;
    *) echo "ucx-crosscheck: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$acceltune" ]]; then
  here=$(cd "$(dirname "$0")/../.." && pwd)
  for c in "$here"/build*/tools/acceltune; do [[ -x "$c" ]] && acceltune=$c && break; done
  [[ -z "$acceltune" ]] && acceltune=$(command -v acceltune || true)
fi
[[ -x "$acceltune" ]] || { echo "ucx-crosscheck: no acceltune binary found; pass --acceltune PATH" >&2; exit 2; }
command -v ucx_perftest >/dev/null || { echo "ucx-crosscheck: ucx_perftest not found; install ucx-utils" >&2; exit 2; }

work=$(mktemp -d)
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

to_bytes() {
  local s=$1
  case "$s" in
    *K) echo $(( ${s%K} * 1024 )) ;;
    *M) echo $(( ${s%M} * 1024 * 1024 )) ;;
    *) echo "$s" ;;
  esac
}

# acceltune's median GB/s for one size and transport.
run_acceltune() {
  local tls=$1 size=$2
  cat > "$work/space.json" <<EOF
{"name": "ucx-crosscheck", "kernel": "ucx", "operation": "tag_bw", "window": $window,
 "params": [{"name": "tls", "kind": "categorical", "values": ["$tls"], "default": "$tls", "env": "UCX_TLS"}]}
EOF
  "$acceltune" bench --space "$work/space.json" --sizes "$size" --max-seconds 1 --json 2>/dev/null |
    python3 -c 'import json,sys; m=json.load(sys.stdin)["measurements"][0]; print(m["value"] if m["state"]=="ok" else "nan")'
}

# ucx_perftest's bandwidth in GB/s (it prints MiB/s) for about 1 GB of data.
run_perftest() {
  local tls=$1 size=$2 bytes iters port out
  bytes=$(to_bytes "$size")
  iters=$(( 1000000000 / bytes ))
  (( iters < 100 )) && iters=100
  port=$(( 20000 + (RANDOM % 20000) ))
  UCX_TLS=$tls ucx_perftest -t tag_bw -s "$bytes" -n "$iters" -w $(( iters / 10 + 1 )) -p "$port" \
    >"$work/server.txt" 2>&1 &
  server_pid=$!
  out=""
  for _ in $(seq 50); do
    sleep 0.1
    if out=$(UCX_TLS=$tls timeout 120 ucx_perftest 127.0.0.1 -t tag_bw -s "$bytes" -n "$iters" \
               -w $(( iters / 10 + 1 )) -p "$port" 2>&1) && grep -q '^Final:' <<<"$out"; then
      break
    fi
    out=""
  done
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  if [[ -z "$out" ]]; then echo nan; return; fi
  # "Final:", iterations, latency 50%/avg/overall (us), bandwidth avg/overall (MiB/s), rates.
  awk '/^Final:/ {printf "%.6f\n", $7 * 1048576 / 1e9}' <<<"$out"
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

declare -A a_vals p_vals
for (( r = 1; r <= rounds; ++r )); do
  for tls in $tls_list; do
    for size in $sizes; do
      # Alternate which tool goes first, so neither always runs on a warmer machine.
      if (( r % 2 )); then
        a_vals[$tls/$size]+="$(run_acceltune "$tls" "$size") "
        p_vals[$tls/$size]+="$(run_perftest "$tls" "$size") "
      else
        p_vals[$tls/$size]+="$(run_perftest "$tls" "$size") "
        a_vals[$tls/$size]+="$(run_acceltune "$tls" "$size") "
      fi
    done
  done
done

printf "ucx tag_bw, window %s, %s rounds interleaved; GB/s medians\n" "$window" "$rounds"
printf "%-5s %-6s %14s %14s %8s\n" "tls" "size" "acceltune" "ucx_perftest" "ratio"
for tls in $tls_list; do
  for size in $sizes; do
    a=$(tr ' ' '\n' <<<"${a_vals[$tls/$size]}" | grep -v '^$' | median)
    p=$(tr ' ' '\n' <<<"${p_vals[$tls/$size]}" | grep -v '^$' | median)
    ratio=$(awk -v a="$a" -v p="$p" 'BEGIN {if (p > 0 && a == a + 0) printf "%.3f", a / p; else print "-"}')
    printf "%-5s %-6s %14.3f %14.3f %8s\n" "$tls" "$size" "$a" "$p" "$ratio"
  done
done
