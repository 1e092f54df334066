#!/bin/sh
# tcp-crosscheck: acceltune's tcp-stream kernel against iperf3 on the same two network
# namespaces and the same settings (streams -P, write size -l, window -w, MTU, congestion -C),
# interleaved (iperf3, acceltune, then acceltune, iperf3 in the next round, ...), printing per
# setting the median and the best throughput of each over the rounds and their ratios. Target:
# within 10%.
#
# Usage (root; Debian packages iperf3, iproute2, jq):
#   tools/bench/tcp-crosscheck.sh [ACCELTUNE_BINARY] [ROUNDS] [SECONDS] [CPUS]
# defaults: build/tools/acceltune, 3 rounds, 3 seconds per iperf3 run (acceltune gets the same
# as its --max-seconds), CPUS 0. Each acceltune run moves 64 MiB messages, so every stream is
# throughput-bound.
#
# Both ends of both tools run under `taskset -c CPUS` (CPUS "all" turns pinning off). Over a veth
# pair the receiver's TCP work runs on the sender's CPU, so unpinned throughput depends on whether
# the scheduler put the two ends on one core or two (on a 2-core machine: 15-26 against 36 Gb/s
# for the same iperf3 setting); pinned, each tool gets the same CPUs and the ratio compares the
# tools, not the scheduler's luck.
#
# The namespaces are at-<pid>-xa / at-<pid>-xb (198.18.2.1 / 198.18.2.2), removed on exit; a
# crashed run leaves them to acceltune's sweep of dead pids. acceltune uses them through
# ACCELTUNE_TCP_NETNS, the variable its trial workers read, so it makes no namespaces of its own.
set -eu

ACCELTUNE=${1:-build/tools/acceltune}
ROUNDS=${2:-3}
SECONDS_PER_RUN=${3:-3}
CPUS=${4:-0}
SIZE=64M
PIN="taskset -c $CPUS"
[ "$CPUS" = all ] && PIN=

for tool in ip iperf3 jq taskset; do
  command -v "$tool" >/dev/null 2>&1 || { echo "tcp-crosscheck: needs $tool (apt-get install iproute2 iperf3 jq)" >&2; exit 2; }
done
[ -x "$ACCELTUNE" ] || { echo "tcp-crosscheck: no acceltune binary at $ACCELTUNE" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "tcp-crosscheck: needs root (network namespaces)" >&2; exit 2; }

A=at-$$-xa
B=at-$$-xb
ADDR_A=198.18.2.1
ADDR_B=198.18.2.2
WORK=$(mktemp -d)
IPERF_PID=
cleanup() {
  [ -n "$IPERF_PID" ] && kill "$IPERF_PID" 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

ip netns add "$A"
ip netns add "$B"
ip link add veth-xa netns "$A" type veth peer name veth-xb netns "$B"
ip -n "$A" addr add "$ADDR_A/24" dev veth-xa
ip -n "$B" addr add "$ADDR_B/24" dev veth-xb
ip -n "$A" link set dev veth-xa up
ip -n "$B" link set dev veth-xb up
ip -n "$A" link set dev lo up
ip -n "$B" link set dev lo up

# shellcheck disable=SC2086
ip netns exec "$A" $PIN iperf3 -s -B "$ADDR_A" -p 5201 >/dev/null 2>&1 &
IPERF_PID=$!
sleep 0.5

export ACCELTUNE_TCP_NETNS="$A,$B,veth-xa,veth-xb,$ADDR_A,$ADDR_B"

# streams write_size window(0: autotuned) mtu congestion
SETTINGS='1 131072 0 1500 cubic
1 131072 0 9000 cubic
4 131072 0 1500 cubic
2 1048576 4194304 9000 cubic
1 131072 1048576 1500 reno
1 16384 0 1500 cubic'

set_mtu() {
  ip -n "$A" link set dev veth-xa mtu "$1"
  ip -n "$B" link set dev veth-xb mtu "$1"
}

# Gbit/s of iperf3 for one setting (the receiver's count, the first second omitted).
run_iperf() {
  set_mtu "$4"
  w=
  [ "$3" -gt 0 ] && w="-w $3"
  # shellcheck disable=SC2086
  ip netns exec "$B" $PIN iperf3 -c "$ADDR_A" -p 5201 -P "$1" -l "$2" $w -C "$5" -t "$SECONDS_PER_RUN" -O 1 -J \
    | jq '.end.sum_received.bits_per_second / 1e9'
}

# Gbit/s of acceltune's tcp-stream for one setting: a space of exactly that config.
run_acceltune() {
  cat >"$WORK/space.json" <<EOF
{"name": "tcp-crosscheck", "kernel": "tcp-stream", "placement": "netns", "sizes": ["$SIZE"], "params": [
  {"name": "mtu", "kind": "ordinal", "values": [$4], "default": $4},
  {"name": "sndbuf", "kind": "ordinal", "values": [$3], "default": $3},
  {"name": "rcvbuf", "kind": "ordinal", "values": [$3], "default": $3},
  {"name": "streams", "kind": "ordinal", "values": [$1], "default": $1},
  {"name": "write_size", "kind": "ordinal", "values": [$2], "default": $2},
  {"name": "congestion", "kind": "categorical", "values": ["$5"], "default": "$5"}]}
EOF
  # Two figures: the median run (what a study ranks by) and the time average over all runs, which
  # is what iperf3 reports; on a busy host the two differ.
  # shellcheck disable=SC2086
  $PIN "$ACCELTUNE" bench --space "$WORK/space.json" --max-seconds "$SECONDS_PER_RUN" --target 0.0001 --json \
    | jq -r '.measurements[0] | "\(.value * 8) \(.bytes * 8 / ((.samples_seconds | add) / (.samples_seconds | length)) / 1e9)"'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

i=0
echo "$SETTINGS" | while read -r streams ws win mtu cc; do
  i=$((i + 1))
  : >"$WORK/iperf.$i"
  : >"$WORK/acceltune.$i"
done

r=1
while [ "$r" -le "$ROUNDS" ]; do
  i=0
  echo "$SETTINGS" | while read -r streams ws win mtu cc; do
    i=$((i + 1))
    if [ $((r % 2)) = 1 ]; then
      run_iperf "$streams" "$ws" "$win" "$mtu" "$cc" >>"$WORK/iperf.$i"
      run_acceltune "$streams" "$ws" "$win" "$mtu" "$cc" >>"$WORK/acceltune.$i"
    else
      run_acceltune "$streams" "$ws" "$win" "$mtu" "$cc" >>"$WORK/acceltune.$i"
      run_iperf "$streams" "$ws" "$win" "$mtu" "$cc" >>"$WORK/iperf.$i"
    fi
  done
  r=$((r + 1))
done

best() { sort -g | tail -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

echo "tcp-crosscheck: $ROUNDS interleaved rounds, iperf3 -t $SECONDS_PER_RUN -O 1, acceltune $SIZE messages, both under '${PIN:-no pinning}'"
echo "  median and best over rounds (Gb/s); acceltune's figure per round is its median run, what a study ranks by"
echo "  (the time average of acceltune's runs, as iperf3 counts, is the at.mean column)"
printf '%-8s %-8s %-8s %-6s %-6s %10s %10s %7s %10s %10s %7s %10s\n' streams write window mtu cc "ip3.med" "at.med" \
  "ratio" "ip3.best" "at.best" "ratio" "at.mean"
i=0
echo "$SETTINGS" | while read -r streams ws win mtu cc; do
  i=$((i + 1))
  ip3=$(median <"$WORK/iperf.$i")
  ip3b=$(best <"$WORK/iperf.$i")
  at=$(cut -d' ' -f1 "$WORK/acceltune.$i" | median)
  atb=$(cut -d' ' -f1 "$WORK/acceltune.$i" | best)
  atm=$(cut -d' ' -f2 "$WORK/acceltune.$i" | median)
  printf '%-8s %-8s %-8s %-6s %-6s %10.2f %10.2f %7s %10.2f %10.2f %7s %10.2f\n' "$streams" "$ws" "$win" "$mtu" "$cc" \
    "$ip3" "$at" "$(ratio "$at" "$ip3")" "$ip3b" "$atb" "$(ratio "$atb" "$ip3b")" "$atm"
done
