#!/usr/bin/env bash
# bench-dist.sh [BIN]: what a distributed run costs. Each scenario runs in
# 1 partition (--cores 1), in P in-memory partitions (--transport memory),
# in P node processes (--procs: with P <= cores each runs a NATS server of
# its own, joined by routes on loopback to the launcher's embedded one),
# and, with
# CONTAINERS=1, in P node containers of the lockstep image (one NATS and
# one coordinator container on a private Docker network; `make image`
# first), alternating the modes REPS times. Per run it prints the wall
# seconds (end to end, from the command or the first container started),
# the run seconds (without start-up: the slowest node's setup-to-finish
# time), the CPU seconds of the command and every process it waited for
# (user and system, the node processes' included; not the containers'),
# the speed-up over 1 partition (wall), the efficiency (speed-up / P),
# the windows and the mean cost of a window by part (µs: compute, encode,
# publish, decode, waiting on slower partitions, waiting on the network
# and barrier) with the NATS round trip measured in the same run, and for
# node processes their CPU seconds over their wall seconds and how often
# a node lost its core to another process per window and how long its
# threads waited for a CPU per window (cpu, pre/w, rq/w), and the
# launcher's CPU per window (srv/w: with --procs, the coordinators and
# the embedded NATS server, which relays the windows' messages only when
# the nodes do not serve); the
# last lines give the median of each mode and the fraction of the
# in-memory speed-up the processes (and containers) reach, from the
# medians and as the median of each repetition's own ratio (robust to a
# machine whose speed drifts between repetitions). About 75 s on 2 cores
# with the defaults.
#
#   SCENARIOS  files (default: the k=16 permutation of 1 MB flows, made from
#              examples/scale/fattree-k32-permutation.yaml, and htsim's
#              perm1024 with NSCC)
#   P          partitions (default 2); REPS repetitions (default 3)
#   CONTAINERS 1 adds the container mode (needs Docker and IMAGE, by
#              default the tag `make image` gives this checkout)
#   SERVERS    node: in the container mode, a NATS server per node (joined by
#              routes, each node on its own) instead of one for the run;
#              embed: each node runs its server itself (lockstep node
#              --serve), no server container
#   ONESERVER  1 adds procs-1srv: --procs --nodes-serve=false, the node
#              processes on the launcher's NATS server (procs has them
#              serve when P <= cores, --procs' default)
#   PHASES     1 adds procs-1ph (two-phase windows off, placement.two_phase:
#              false) and mem-2ph (on in memory, two_phase: true) to the
#              defaults (on over NATS, off in memory; docs/decisions.md,
#              "Two-phase windows"), alternated with the others
#   CSV        also write every run's row to this file (for pandas: the
#              columns above, µs a window; empty where a mode has none),
#              atomically at the end
set -euo pipefail
BIN=${1:-bin/lockstep}
P=${P:-2}
REPS=${REPS:-3}
CONTAINERS=${CONTAINERS:-0}
PHASES=${PHASES:-0}
ONESERVER=${ONESERVER:-0}
SERVERS=${SERVERS:-one}
IMAGE=${IMAGE:-lockstep:$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
tmp=$(mktemp -d)
net=""
cleanup() {
  # Containers still being started in the background (the container
  # mode starts them at once) must exist before they can be removed.
  wait 2>/dev/null || true
  if [ -n "$net" ]; then
    docker ps -aq --filter "label=lockstep.bench=$net" | xargs -r docker rm -f >/dev/null 2>&1 || true
    docker network rm "$net" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
  # shellcheck disable=SC2086
  [ -n "${ones:-}" ] && rm -f $ones
  return 0
}
trap cleanup EXIT
if [ -z "${SCENARIOS:-}" ]; then
  sed -e 's/k: 32/k: 16/' -e 's/size: 16KB/size: 1MB/' -e 's/name: fattree-k32-permutation/name: fattree-k16-permutation-1MB/' \
    examples/scale/fattree-k32-permutation.yaml > "$tmp/k16-1MB.yaml"
  SCENARIOS="$tmp/k16-1MB.yaml examples/htsim/perm1024-nscc.yaml"
fi
modes="1 mem procs"
[ "$CONTAINERS" = 1 ] && modes="$modes containers"
[ "$PHASES" = 1 ] && modes="$modes mem-2ph procs-1ph"
[ "$ONESERVER" = 1 ] && modes="$modes procs-1srv"

# phases SCENARIO true|false: a copy of it with placement.two_phase set,
# beside it (its files are found relative to it); removed at exit.
phases() {
  local o="${1%.yaml}.two-phase-$2-$$.yaml"
  { cat "$1"; printf '\nplacement: {two_phase: %s}\n' "$2"; } > "$o"
  echo "$o"
}

# containers NAME SCENARIO OUT: one run across containers; the launcher is
# this machine's BIN with --external, on the bridge network's address.
containers() {
  local s=$1 out=$2 run=bench$RANDOM
  net=lockstep-bench-$run
  docker network create --label "lockstep.bench=$net" "$net" >/dev/null
  local lbl=(--label "lockstep.bench=$net" --network "$net")
  local gmp=$(( $(nproc) / P )); [ "$gmp" -lt 1 ] && gmp=1
  local ip routes=""
  if [ "$SERVERS" = embed ]; then
    # Every node runs its machine's server (lockstep node --serve), joined
    # by routes; the coordinator and the launcher use node 0's.
    for i in $(seq 0 $((P - 1))); do routes="$routes${routes:+,}nats://$net-n$i:6222"; done
    for i in $(seq 0 $((P - 1))); do
      docker run -d "${lbl[@]}" --name "$net-n$i" -e GOMAXPROCS=$gmp "$IMAGE" node --serve 0.0.0.0:4222 \
        --cluster 0.0.0.0:6222 --routes "$routes" --run "$run" --partition "$i" >/dev/null &
    done
    until ip=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$net-n0" 2>/dev/null) && [ -n "$ip" ]; do
      sleep 0.01 # polling docker until node 0's container exists
    done
  else
    # SERVERS=node: a NATS server per node container, joined by routes,
    # each node on its own (docs/deploy.md, "A NATS server per machine").
    local nservers=1
    [ "$SERVERS" = node ] && nservers=$P
    for i in $(seq 0 $((nservers - 1))); do routes="$routes${routes:+,}nats://$net-nats$i:6222"; done
    for i in $(seq 0 $((nservers - 1))); do
      if [ "$nservers" = 1 ]; then
        docker run -d "${lbl[@]}" --name "$net-nats$i" "$IMAGE" nats --addr=0.0.0.0:4222 >/dev/null
      else
        docker run -d "${lbl[@]}" --name "$net-nats$i" "$IMAGE" nats --addr=0.0.0.0:4222 --jetstream=false \
          --name "s$i" --cluster 0.0.0.0:6222 --routes "$routes" --monitor 0.0.0.0:8222 >/dev/null
      fi
    done
    # Nodes join once every server has a route to every other (a report
    # published before its route exists is lost; the run would recover
    # only through the leader's resync).
    for i in $(seq 0 $((nservers - 1))); do
      [ "$nservers" -gt 1 ] || break # one server: no routes
      local sip
      sip=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$net-nats$i")
      python3 - "$sip" "$nservers" <<'PY'
import json, sys, time, urllib.request
ip, n = sys.argv[1], int(sys.argv[2])
end = time.time() + 30
while True:
    try:
        r = json.load(urllib.request.urlopen("http://%s:8222/routez" % ip, timeout=1))
        if len({x.get("remote_name") for x in r.get("routes") or []}) >= n - 1:
            break
    except OSError:
        pass
    if time.time() > end:
        sys.exit("server %s: routes not formed in 30 s" % ip)
    time.sleep(0.05)
PY
    done
    ip=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$net-nats0")
    # The nodes, the coordinator and the launcher start at once, as
    # docker compose or a Kubernetes apply starts them.
    for i in $(seq 0 $((P - 1))); do
      local own="nats://$ip:4222"
      [ "$nservers" -gt 1 ] && own="nats://$net-nats$i:4222"
      docker run -d "${lbl[@]}" --name "$net-n$i" -e GOMAXPROCS=$gmp "$IMAGE" \
        node --nats "$own" --run "$run" --partition "$i" >/dev/null &
    done
  fi
  docker run -d "${lbl[@]}" --name "$net-c1" -v "$(realpath "$s"):/s.yaml:ro" "$IMAGE" \
    coordinator /s.yaml --partitions "$P" --nats "nats://$ip:4222" --run "$run" --id c1 >/dev/null &
  "$BIN" run "$s" --partitions "$P" --external --nats "nats://$ip:4222" --run-id "$run" --out "$out" --quiet
  wait
  docker ps -aq --filter "label=lockstep.bench=$net" | xargs -r docker rm -f >/dev/null 2>&1 || true
  docker network rm "$net" >/dev/null 2>&1 || true
  net=""
}

# children_cpu sets cpu_s to the CPU seconds (user and system) of every
# child of this shell waited for so far, their own waited children (the
# node processes) included: `times` in this shell, not a subshell, whose
# counts start at zero.
children_cpu() {
  times > "$tmp/times"
  cpu_s=$(awk 'NR == 2 { split($1, a, /[ms]/); split($2, b, /[ms]/); printf "%.3f", a[1] * 60 + a[2] + b[1] * 60 + b[2] }' "$tmp/times")
}

printf '%-28s %-10s %3s %7s %7s %7s %7s %5s %6s %8s %6s %6s %6s %6s %6s %6s %6s %5s %5s %5s %5s\n' scenario mode rep wall_s run_s cpu_s speedup eff windows compute ahead enc pub dec imbal net rtt cpu pre/w rq/w srv/w
for s in $SCENARIOS; do
  name=$(basename "$s" .yaml)
  s1="" s2=""
  if [ "$PHASES" = 1 ]; then
    s1=$(phases "$s" false)
    s2=$(phases "$s" true)
    ones="${ones:-} $s1 $s2"
  fi
  for r in $(seq "$REPS"); do
    for m in $modes; do
      out=$tmp/$name-$m-$r
      children_cpu; c0=$cpu_s
      t0=$(date +%s.%N)
      case $m in
        1) "$BIN" run "$s" --out "$out" --quiet --cores 1 ;;
        mem) "$BIN" run "$s" --out "$out" --quiet --partitions "$P" --transport memory ;;
        procs) "$BIN" run "$s" --out "$out" --quiet --partitions "$P" --procs ;;
        mem-2ph) "$BIN" run "$s2" --out "$out" --quiet --partitions "$P" --transport memory ;;
        procs-1ph) "$BIN" run "$s1" --out "$out" --quiet --partitions "$P" --procs ;;
        containers) containers "$s" "$out" ;;
        procs-1srv) "$BIN" run "$s" --out "$out" --quiet --partitions "$P" --procs --nodes-serve=false ;;
      esac
      t1=$(date +%s.%N)
      children_cpu
      tree=$(awk -v a="$c0" -v b="$cpu_s" 'BEGIN { printf "%.3f", b - a }')
      [ "$m" = containers ] && tree=-
      wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
      echo "$name $m $r $wall" >> "$tmp/walls"
      echo "$name $m $r $tree" >> "$tmp/trees"
      python3 - "$out/summary.json" "$name" "$m" "$r" "$wall" "$tmp/walls" "$P" "$tmp/rows.csv" "$tree" <<'PY'
import csv, json, sys
f, name, mode, rep, wall, walls, P, rows, tree = sys.argv[1:]
wall, P = float(wall), int(P)
one = [float(l.split()[3]) for l in open(walls) if l.split()[0] == name and l.split()[1] == "1"]
base = sorted(one)[len(one) // 2] if one else wall
j = json.load(open(f))
d = j.get("extra", {}).get("distributed", {})
w = d.get("window_us", {})
# run_s: the run without process or container start-up: the slowest
# node's wall time (setup fetch to finish), or in one partition the wall
# time less the setup.
if d.get("per_node") and d["per_node"][0].get("wall_seconds"):
    run = max(n["wall_seconds"] for n in d["per_node"])
else:
    run = j["perf"]["wall_seconds"] - j["perf"].get("setup_seconds", 0)
sp = base / wall
eff = sp / (1 if mode == "1" else P)
g = lambda k: "%6.0f" % w[k] if k in w else "     -"
# Node processes (and containers) report their CPU time and involuntary
# context switches: cpu is their CPU seconds over their wall seconds,
# pre/w how often a node lost its core to another process per window,
# rq/w the µs per window a node's threads were runnable but waited for a
# CPU (Linux).
nodes = [n for n in d.get("per_node", []) if n.get("cpu_seconds")]
cpu = "%5.2f" % (sum(n["cpu_seconds"] for n in nodes) / sum(n["wall_seconds"] for n in nodes)) if nodes else "    -"
pre = "%5.1f" % (sum(n.get("preempted", 0) for n in nodes) / len(nodes) / d["windows"]) if nodes and d.get("windows") else "    -"
rq = "%5.0f" % (sum(n.get("runq_wait_seconds", 0) for n in nodes) / len(nodes) / d["windows"] * 1e6) if nodes and d.get("windows") else "    -"
# srv/w: the launcher's CPU µs per window (with --procs: the embedded
# NATS server relaying the windows' messages, and the coordinators).
srv = "%5.0f" % (d["launcher_cpu_seconds"] / d["windows"] * 1e6) if d.get("launcher_cpu_seconds") and d.get("windows") and mode != "containers" else "    -"
print("%-28s %-10s %3s %7.2f %7.2f %7s %7.2f %5.2f %6s %8s %6s %6s %6s %6s %6s %6s %6s %5s %5s %5s %5s" % (name[:28], mode, rep, wall, run, tree, sp, eff,
      d.get("windows", "-"), g("compute"), g("ahead"), g("encode"), g("publish"), g("decode"), g("wait_imbalance"), g("wait_net"),
      "%6.0f" % d["nats_rtt_us"] if d.get("nats_rtt_us") else "     -", cpu, pre, rq, srv))
# The same row for the CSV, unformatted ("" where the mode has none).
with open(rows, "a", newline="") as o:
    csv.writer(o).writerow([name, mode, rep, "%.3f" % wall, "%.3f" % run, tree if tree != "-" else "", "%.3f" % sp, "%.3f" % eff, d.get("windows", "")] +
                           ["%.1f" % w[k] if k in w else "" for k in ("compute", "ahead", "encode", "publish", "decode", "wait_imbalance", "wait_net")] +
                           [("%.1f" % d["nats_rtt_us"]) if d.get("nats_rtt_us") else ""] +
                           [x.strip() if x.strip() != "-" else "" for x in (cpu, pre, rq, srv)])
if d.get("nats_rtt_us"):
    with open(walls + ".net", "a") as o:
        o.write("%s %s %f\n" % (name, mode, w.get("wait_net", 0) / d["nats_rtt_us"]))
PY
    done
  done
done
echo
python3 - "$tmp/walls" "$tmp/trees" <<'PY'
import sys, collections
trees = collections.defaultdict(list)
for l in open(sys.argv[2]):
    n, m, r, c = l.split()
    if c != "-":
        trees[(n, m)].append(float(c))
walls = collections.defaultdict(list)
byrep = {}  # (scenario, mode, repetition) -> wall
for l in open(sys.argv[1]):
    n, m, r, w = l.split()
    walls[(n, m)].append(float(w))
    byrep[(n, m, r)] = float(w)
med = {k: sorted(v)[len(v) // 2] for k, v in walls.items()}
best = {k: min(v) for k, v in walls.items()}
nets = collections.defaultdict(list)
try:
    for l in open(sys.argv[1] + ".net"):
        n, m, x = l.split()
        nets[(n, m)].append(float(x))
except FileNotFoundError:
    pass
for n in sorted({k[0] for k in med}):
    one = med[(n, "1")]
    line = ["%s: median wall" % n] + ["%s %.2fs (x%.2f)" % (m, med[(n, m)], one / med[(n, m)]) for m in ("1", "mem", "procs", "procs-1srv", "containers", "mem-2ph", "procs-1ph") if (n, m) in med]
    print("  ".join(line))
    print("  ".join(["%s: best wall " % n] + ["%s %.2fs" % (m, best[(n, m)]) for m in ("1", "mem", "procs", "procs-1srv", "containers", "mem-2ph", "procs-1ph") if (n, m) in best]))
    print("  ".join(["%s: median CPU" % n] + ["%s %.2fs" % (m, sorted(trees[(n, m)])[len(trees[(n, m)]) // 2]) for m in ("1", "mem", "procs", "procs-1srv", "mem-2ph", "procs-1ph") if trees.get((n, m))]) +
          "  (user and system seconds of the command and its processes)")
    for m in ("procs", "procs-1srv", "containers", "procs-1ph"):
        if (n, m) in nets:
            v = sorted(nets[(n, m)])
            print("  %s: %s: median net wait per window %.1f NATS round trips (%s)" % (n, m, v[len(v) // 2], " ".join("%.1f" % x for x in v)))
    for m in ("procs", "procs-1srv", "containers", "procs-1ph"):
        if (n, "mem") in med and (n, m) in med:
            # Also the median of each repetition's own ratio: the modes of
            # one repetition run one after the other, so a machine whose
            # speed drifts over minutes moves both sides of it.
            rs = sorted(byrep[(n, "mem", r)] / byrep[(n, m, r)] for (n2, m2, r) in byrep if n2 == n and m2 == m and (n, "mem", r) in byrep)
            print("  %s: %s reach %.0f%% of the in-memory speed-up (median of the repetitions' own ratios %.0f%%: %s)" % (
                n, m, 100 * med[(n, "mem")] / med[(n, m)], 100 * rs[len(rs) // 2], " ".join("%.0f" % (100 * x) for x in rs)))
    if (n, "mem-2ph") in med and (n, "procs") in med:
        print("  %s: procs reach %.0f%% of mem-2ph's speed-up" % (n, 100 * med[(n, "mem-2ph")] / med[(n, "procs")]))
PY
if [ -n "${CSV:-}" ]; then
  { echo "scenario,mode,rep,wall_s,run_s,tree_cpu_s,speedup,eff,windows,compute_us,ahead_us,encode_us,publish_us,decode_us,imbalance_us,net_us,rtt_us,cpu,preempted_per_window,runq_us,launcher_us"
    cat "$tmp/rows.csv"; } > "$CSV.tmp.$$"
  mv "$CSV.tmp.$$" "$CSV"
  echo "every run's row in $CSV"
fi
