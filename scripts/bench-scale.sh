#!/usr/bin/env bash
# bench-scale.sh [BIN]: fat-tree permutations of 16 KB flows for k = 8, 16,
# 24, 32, 48 (examples/scale/fattree-k32-permutation.yaml with k changed),
# each in 1 partition (--partitions 1), in 2 and 4 in-memory partitions and
# in 2 node processes over NATS (--procs --partitions 2); prints setup
# seconds (one partition only), run seconds, events/s and peak RSS (of the
# launching process: for node processes, without the children). One run
# at a time: about 30 seconds on 2 cores. KS, PARTS choose a subset.
set -euo pipefail
BIN=${1:-bin/lockstep}
KS=${KS:-8 16 24 32 48}
PARTS=${PARTS:-1 2 4 procs2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=examples/scale/fattree-k32-permutation.yaml
printf '%-6s %-6s %-6s %8s %8s %10s %10s\n' fabric hosts parts setup_s run_s Mev/s peak_MB
for k in $KS; do
  y=$tmp/k$k.yaml
  sed -e "s/k: 32/k: $k/" -e "s/name: fattree-k32-permutation/name: fattree-k$k-permutation/" "$src" > "$y"
  for p in $PARTS; do
    out=$tmp/out-$k-$p
    case $p in
      1) args=(--partitions 1) ;;
      procs*) args=(--procs --partitions "${p#procs}") ;;
      *) args=(--transport memory --partitions "$p") ;;
    esac
    "$BIN" run "$y" --out "$out" --quiet "${args[@]}"
    python3 - "$out/summary.json" "$k" "$p" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); p = s.get("perf", {}); k = int(sys.argv[2])
setup = p.get("setup_seconds")
run = p["wall_seconds"] - (setup or 0)
print("%-6s %-6d %-6s %8s %8.2f %10.2f %10.0f" % ("k=%d" % k, k**3 // 4, sys.argv[3],
      "%.2f" % setup if setup else "-", run, p["events_per_second"] / 1e6, p["peak_rss_bytes"] / 2**20))
PY
  done
done
