#!/usr/bin/python3
"""tcp-stream's honesty, measured on two network namespaces this script makes (root; Debian
packages iproute2 and iperf3):

1. Fidelity. Each tool moves data for a few seconds while a sampler inside the receiving namespace
   reads the veth's own byte counter (rx_bytes) every 5 ms. The counter's throughput over the span
   the data moved (from the first to the last 5 ms step that moved at least a quarter of the
   fastest step's bytes: a tool's start-up and its control messages left out) is compared with the tool's time average over its timed runs: tcp-stream's
   (`acceltune bench`, 16M runs), iperf3's received bandwidth (-t), and acceltune-tcp-client's
   (16M runs, the delivered gains' client). The median the tool ranks by is printed beside it:
   on a noisy machine slow runs pull the time average below the median. The counter sees frames: with veth's segmentation offload one header per
   super-packet, so it reads about 0-5% above the payload. Target: every ratio within 10%.

2. The job-wide part, certified against delivered. The settings a job gets from tcp-script (the
   link MTU, the congestion control) against the defaults, in interleaved rounds (defaults then
   setting, then setting then defaults, ...), at 64K, 1M and 16M, through the kernel (what
   certification measures) and through acceltune-tcp-client (what delivery measures). Per size the
   geometric mean of the per-round ratios and its 95% interval (Student's t); the two should
   overlap.

usage: tcp_fidelity.py [--bin DIR] [--seconds S] [--rounds N] [--setting MTU,CONGESTION]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

A_ADDR, B_ADDR = "198.18.4.1", "198.18.4.2"
T975 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086]


def sh(*argv, **kw):
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, **kw).stdout


class Pair:
    """Namespace a (receivers, servers) and b (senders), joined by a veth pair."""

    def __init__(self):
        self.a, self.b = f"at-{os.getpid()}-ta", f"at-{os.getpid()}-tb"
        sh("ip", "netns", "add", self.a)
        sh("ip", "netns", "add", self.b)
        sh("ip", "link", "add", "veth-ta", "netns", self.a, "type", "veth", "peer", "name", "veth-tb", "netns", self.b)
        for ns, dev, addr in ((self.a, "veth-ta", A_ADDR), (self.b, "veth-tb", B_ADDR)):
            sh("ip", "-n", ns, "addr", "add", addr + "/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", "dev", dev, "up")
            sh("ip", "-n", ns, "link", "set", "dev", "lo", "up")
        # Senders in b: the congestion control of new connections there is what the job gets.
        self.cc_default = sh("ip", "netns", "exec", self.b, "sysctl", "-n", "net.ipv4.tcp_congestion_control").strip()

    def set(self, mtu, congestion):
        sh("ip", "-n", self.a, "link", "set", "dev", "veth-ta", "mtu", str(mtu))
        sh("ip", "-n", self.b, "link", "set", "dev", "veth-tb", "mtu", str(mtu))
        for ns in (self.a, self.b):
            # A namespace may refuse a default outside the host's allowed list; the kernel and the
            # client then set it per socket (--congestion), as the delivery client does.
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.tcp_congestion_control={congestion}"],
                           capture_output=True)

    def close(self):
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def space_file(work, sizes, mtu, congestion):
    path = os.path.join(work, f"space-{mtu}-{congestion}.json")
    with open(path, "w") as f:
        json.dump({"name": "tcp-fidelity", "kernel": "tcp-stream", "placement": "netns", "sizes": sizes,
                   "params": [{"name": "mtu", "kind": "ordinal", "values": [mtu], "default": mtu},
                              {"name": "congestion", "kind": "categorical", "values": [congestion],
                               "default": congestion}]}, f)
    return path


def kernel_values(args, pair, work, sizes, mtu, congestion, seconds):
    """GB/s per size from tcp-stream (what a study and its certification measure)."""
    env = dict(os.environ, ACCELTUNE_TCP_NETNS=f"{pair.a},{pair.b},veth-ta,veth-tb,{A_ADDR},{B_ADDR}")
    out = sh(os.path.join(args.bin, "acceltune"), "bench", "--space", space_file(work, sizes, mtu, congestion),
             "--max-seconds", str(seconds), "--target", "0.0001", "--json", env=env)
    # Per size: the value (bytes over the median seconds per run, what a study ranks by) and the
    # time average over the timed runs (what a byte counter sees).
    return {m["bytes"]: (m["value"], m["bytes"] / statistics.fmean(m["samples_seconds"]) / 1e9)
            for m in json.loads(out)["measurements"]}


def client_values(args, pair, sizes_bytes, congestion, seconds, port):
    """GB/s per size from acceltune-tcp-client (what delivery measures)."""
    client = os.path.join(args.bin, "acceltune-tcp-client")
    server = subprocess.Popen(["ip", "netns", "exec", pair.a, client, "serve", "--bind", A_ADDR, "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        out = sh("ip", "netns", "exec", pair.b, client, "send", "--to", A_ADDR, "--port", str(port), "--sizes",
                 ",".join(map(str, sizes_bytes)), "--seconds", str(seconds), "--congestion", congestion)
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    values = {}
    for line in out.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split())
        size = int(fields["size"])
        values[size] = (size / float(fields["median_seconds"]) / 1e9, size / float(fields["mean_seconds"]) / 1e9)
    return values


def iperf3_value(pair, congestion, seconds, port):
    server = subprocess.Popen(["ip", "netns", "exec", pair.a, "iperf3", "-s", "-1", "-B", A_ADDR, "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        out = sh("ip", "netns", "exec", pair.b, "iperf3", "-c", A_ADDR, "-p", str(port), "-t", str(seconds), "-C",
                 congestion, "-J")
    finally:
        server.wait(timeout=10)
    rate = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 8e9
    return rate, rate  # iperf3 reports the time average only


def counted(pair, run):
    """Runs `run` while sampling veth-ta's rx_bytes; returns (run's result, counter GB/s over the
    span the data moved)."""
    sampler = subprocess.Popen(
        ["ip", "netns", "exec", pair.a, "python3", "-c",
         "import time,sys\n"
         "p='/sys/class/net/veth-ta/statistics/rx_bytes'\n"
         "while True:\n"
         "  print(time.monotonic(), open(p).read().strip(), flush=True)\n"
         "  time.sleep(0.005)\n"],
        stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)
    try:
        result = run()
        time.sleep(0.2)
    finally:
        sampler.kill()
    samples = [tuple(map(float, line.split())) for line in sampler.stdout.read().splitlines() if len(line.split()) == 2]
    # The active span: from the first to the last 5 ms step that moved at least a quarter of the
    # fastest step's bytes (a control message or a connection's set-up moves a few bytes only).
    steps = [(samples[i][1] - samples[i - 1][1]) / max(samples[i][0] - samples[i - 1][0], 1e-6)
             for i in range(1, len(samples))]
    busy = [i for i, v in enumerate(steps) if v >= 0.25 * max(steps)]
    first, last = samples[busy[0]], samples[busy[-1] + 1]
    rate = (last[1] - first[1]) / (last[0] - first[0]) / 1e9
    return result, rate


def geo_interval(ratios):
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = statistics.fmean(logs)
    if n < 2:
        return math.exp(mean), 0.0, math.inf
    half = T975[min(n - 1, len(T975) - 1)] * statistics.stdev(logs) / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default="build/tools", help="folder of acceltune and acceltune-tcp-client")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds per fidelity run")
    p.add_argument("--rounds", type=int, default=6, help="interleaved rounds of part 2")
    p.add_argument("--setting", default="9000,cubic", help="part 2's job-wide setting: MTU,CONGESTION")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("tcp_fidelity: needs root (network namespaces)")
    pair = Pair()
    work = tempfile.mkdtemp()
    port = 5401
    try:
        print(f"tcp_fidelity: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, the namespaces' own default "
              f"congestion control {pair.cc_default}")
        print("part 1: each tool's throughput against the receiving veth's rx_bytes over the span its data moved")
        print("  (the tool's median is what a study ranks by; its time average is what a byte counter sees)")
        print(f"{'mtu':>5} {'tool':<22} {'median GB/s':>12} {'mean GB/s':>10} {'counter GB/s':>13} {'counter/mean':>13}")
        for mtu in (1500, 9000):
            pair.set(mtu, "cubic")
            runs = [
                ("tcp-stream (16M runs)",
                 lambda: kernel_values(args, pair, work, ["16M"], mtu, "cubic", args.seconds)[16 << 20]),
                ("iperf3 (-t)", lambda: iperf3_value(pair, "cubic", args.seconds, port)),
                ("acceltune-tcp-client",
                 lambda: client_values(args, pair, [16 << 20], "cubic", args.seconds, port + 1)[16 << 20]),
            ]
            for name, run in runs:
                port += 2
                (median, mean), rate = counted(pair, run)
                flag = "" if 0.9 <= rate / mean <= 1.1 else "  OUTSIDE 10%"
                print(f"{mtu:>5} {name:<22} {median:>12.2f} {mean:>10.2f} {rate:>13.2f} {rate / mean:>13.3f}{flag}")

        mtu, cc = args.setting.split(",")
        mtu = int(mtu)
        sizes = ["64K", "1M", "16M"]
        sizes_bytes = [64 << 10, 1 << 20, 16 << 20]
        print(f"\npart 2: job-wide mtu={mtu} congestion={cc} against mtu=1500 congestion=cubic, {args.rounds} "
              "interleaved rounds")
        ratios = {(tool, b): [] for tool in ("kernel", "client") for b in sizes_bytes}
        values = {(tool, arm, b): [] for tool in ("kernel", "client") for arm in (0, 1) for b in sizes_bytes}
        for r in range(args.rounds):
            arms = [(1500, "cubic"), (mtu, cc)]
            if r % 2:
                arms.reverse()
            got = {}
            for arm in arms:
                pair.set(*arm)
                port += 2
                got[arm] = (kernel_values(args, pair, work, sizes, arm[0], arm[1], 0.3),
                            client_values(args, pair, sizes_bytes, arm[1], 0.3, port))
            for b in sizes_bytes:
                for arm_index, arm in enumerate([(1500, "cubic"), (mtu, cc)]):
                    values[("kernel", arm_index, b)].append(got[arm][0][b][0])
                    values[("client", arm_index, b)].append(got[arm][1][b][0])
                ratios[("kernel", b)].append(got[(mtu, cc)][0][b][0] / got[(1500, "cubic")][0][b][0])
                ratios[("client", b)].append(got[(mtu, cc)][1][b][0] / got[(1500, "cubic")][1][b][0])
        print(f"{'size':<6} {'kernel (certified)':>26} {'client (delivered)':>26} {'overlap':>8}   medians GB/s: "
              "kernel defaults, setting; client defaults, setting")
        for name, b in zip(sizes, sizes_bytes):
            k, c = geo_interval(ratios[("kernel", b)]), geo_interval(ratios[("client", b)])
            overlap = "yes" if k[1] <= c[2] and c[1] <= k[2] else "NO"
            med = [statistics.median(values[(tool, arm, b)]) for tool in ("kernel", "client") for arm in (0, 1)]
            print(f"{name:<6} {k[0]:>8.2f}x [{k[1]:.2f}, {k[2]:.2f}]   {c[0]:>8.2f}x [{c[1]:.2f}, {c[2]:.2f}]   {overlap:>6}   "
                  + " ".join(f"{v:.2f}" for v in med))
    finally:
        pair.close()


if __name__ == "__main__":
    main()
