#!/usr/bin/env python3
"""dist-model.py: project a distributed run's speed-up on M machines.

The model (docs/decisions.md, "The distributed engine's cost model") splits
one window of a peer run (every node hears every node's report through one
NATS server) into the terms measured by `make bench-dist` and summary.json:

  T_window(P) = imb * C / P                     compute, P partitions, one per machine
              + X(P) / (P * W) * c_pkt          cross-partition packets (encode, publish, decode, inject)
              + (P - 1) * d_rep                 reading every peer's report
              + lat(RTT)                        the last report's trip: one way through the server
              + P * (P - 1) * s_srv             the server handing each of P reports to the P - 1
                                                other nodes (the coordinator hears none: it
                                                follows the nodes' statuses)

With --servers machine there is a NATS server on every machine, joined by
routes (`lockstep nats --cluster --routes`, docs/deploy.md), and each node
connects to its own: a report goes once to every other server and each
server hands the P - 1 reports it receives to its node, so the fan-out
term is per server, all servers at once and alike (the coordinator
leader hears no reports, so its server is no busier):

              + (2P - 2) * s_srv                a server: P - 1 out, P - 1 in
              + hop                             a report crosses two servers on its way

With --servers node each node runs its machine's server itself (`lockstep
node --serve`) and talks to it in process: the P - 1 reports a server
receives reach its node without a socket, so only the P - 1 route sends
count, and the second server's pass is in the receiving node's process
(a request and reply across a route took 31-33 µs between in-process
clients, less than 57-84 µs through one server between TCP clients):

              + (P - 1) * s_srv                 a server: P - 1 out over routes
              + 0                               no hop beyond the one-server latency

with C the one-partition compute per window (run seconds / windows), W the
windows, X(P) the packets that cross the cut in P partitions (grows as
1 - 1/P from the measured X at Pm partitions), imb the load imbalance
(the busiest partition's events over the mean, in the Pm-partition run,
assumed to hold at P), and RTT the network's round trip. With
--cores N all P partitions share one machine of N cores (the check against
this machine's runs): the per-node terms are multiplied by P / min(P, N). Speed-up(P) = C / T_window(P). The term that is largest at P says what
limits it.

Usage: dist-model.py NAME=ONE.json,PART.json[,Pm] ... [--rtt 40,25,100] [--machines 16,64]
  ONE.json  summary.json of the run in one partition (--cores 1)
  PART.json summary.json of the run in Pm in-memory partitions (windows,
            cross packets; Pm defaults to 4)
Options set the per-unit costs (defaults measured on the 2-core machine,
see docs/decisions.md): --pkt-ns, --report-us, --server-us, --imbalance,
--lat (one-way latency as a multiple of the RTT, plus --lat-us fixed),
--servers one|machine|node and --hop-us (the second server's pass).
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="NAME=ONE.json,PART.json[,Pm]")
    ap.add_argument("--machines", default="1,2,4,16,64")
    ap.add_argument("--rtt", default="40,25,100", help="network round trips, µs")
    ap.add_argument("--pkt-ns", type=float, default=360.0, help="cost of one cross packet at its two nodes, ns")
    ap.add_argument("--report-us", type=float, default=None,
                    help="cost of reading one peer's report, µs (default: measured, 0.09 + 0.0035 P: a report carries a count per node; "
                         "BenchmarkPeerReplicaWindow, 0.14 / 0.31 / 0.98 µs at 16 / 64 / 256 nodes)")
    ap.add_argument("--server-us", type=float, default=1.0, help="server cost of one report delivery, µs")
    ap.add_argument("--imbalance", type=float, default=0, help="slowest partition's compute over the mean (default: measured in PART.json)")
    ap.add_argument("--cores", type=int, default=0, help="cores of the one machine all P partitions share (0: a machine per partition)")
    ap.add_argument("--lat", type=float, default=0.5, help="one-way latency in RTTs")
    ap.add_argument("--lat-us", type=float, default=20.0, help="fixed per-window latency (wake-ups, scheduling), µs")
    ap.add_argument("--servers", choices=["one", "machine", "node"], default="one",
                    help="one NATS server for the run, one per machine joined by routes, or one in every node (lockstep node --serve)")
    ap.add_argument("--hop-us", type=float, default=20.0, help="with --servers machine: a report's pass through the second server, µs (19-35 here: BenchmarkNATSRequestReplyAcrossRoute)")
    a = ap.parse_args()
    machines = [int(x) for x in a.machines.split(",")]
    rtts = [float(x) for x in a.rtt.split(",")]
    print("%-16s %6s %8s %9s %8s %5s | %s" % ("scenario", "P", "C_us", "windows", "pkts/w", "imb",
                                          "  ".join("RTT=%gus: speed-up (limit)" % r for r in rtts)))
    for spec in a.runs:
        name, rest = spec.split("=", 1)
        parts = rest.split(",")
        one, part = load(parts[0]), load(parts[1])
        pm = int(parts[2]) if len(parts) > 2 else 4
        perf = one["perf"]
        run_s = perf["wall_seconds"] - perf.get("setup_seconds", 0)
        d = part["extra"]["distributed"]
        W = d["windows"]
        C = run_s / W * 1e6  # µs of one-partition compute per window
        x_inf = d["cross_packets"] / (1 - 1 / pm)
        imb = a.imbalance
        if not imb:
            # Events per partition: deterministic, unlike their seconds.
            evs = [n["events"] for n in d["per_node"]]
            imb = max(evs) / (sum(evs) / len(evs)) if sum(evs) > 0 else 1.0
        for P in machines:
            X = x_inf * (1 - 1 / P) if P > 1 else 0.0
            # With P partitions on one machine of `cores` cores, the
            # partitions' work is shared out over the cores.
            share = P / min(P, a.cores) if a.cores else 1.0
            terms = {
                "compute": (imb if P > 1 else 1.0) * C / P * share,
                "packets": X / (P * W) * a.pkt_ns / 1e3 * share,
                "reports": (P - 1) * (a.report_us if a.report_us is not None else 0.09 + 0.0035 * P) * share,
                "server": P * (P - 1) * a.server_us,
            }
            if a.servers == "machine":
                terms["server"] = (2 * P - 2) * a.server_us
            elif a.servers == "node":
                terms["server"] = (P - 1) * a.server_us
            hop = a.hop_us if a.servers == "machine" and P > 1 else 0.0
            cols = []
            for rtt in rtts:
                t = dict(terms)
                t["latency"] = (a.lat * rtt + a.lat_us + hop) if P > 1 else 0.0
                total = sum(t.values())
                limit = max((v, k) for k, v in t.items() if k != "compute")[1] if P > 1 else "-"
                cols.append("%8.2f (%s)" % (C / total, limit))
            print("%-16s %6d %8.0f %9d %8.0f %5.2f | %s" % (name, P, C, W, X / W, imb, "  ".join("%-24s" % c for c in cols)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
