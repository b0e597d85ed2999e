#!/usr/bin/env bash
# same-outputs.sh OLD NEW: checks that two lockstep binaries write the same
# outputs. Every examples/*.yaml and examples/collectives/*.yaml (those
# that run), examples/htsim/perm1024-strack.yaml and perm1024-nscc.yaml
# run with --partitions 1 --cwnd --queues 10us under both (without those
# flags when the old binary refuses them: stracksim); every file but
# summary.json must be byte-identical (cmp), and summary.json identical
# once its perf, build and wall-time fields are removed. A few scenarios
# also run NEW with --partitions 2 against OLD with --partitions 1 (all
# but summary.json's extra.distributed, which a run in one partition does
# not have) and against OLD with --partitions 2 (extra.distributed too,
# without its timings: windows, batches, events per node).
#
#   scripts/same-outputs.sh /tmp/lockstep-main bin/lockstep
#
# OUT (default: a temporary directory) keeps the runs; NICE (default 5)
# is the niceness. It exits 1 when an output differs.
set -u
old=${1:?usage: same-outputs.sh OLD-BINARY NEW-BINARY}
new=${2:?usage: same-outputs.sh OLD-BINARY NEW-BINARY}
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
nice=${NICE:-5}
fail=0
ran=0
flags="--cwnd --queues 10us"

# strip FILE [MODE] prints summary.json without its perf, build and
# wall-time fields; MODE nodist also drops extra.distributed, MODE dist
# keeps it without its timings and what depends on how the run went
# rather than on the scenario (a node's resends, its server's routes).
strip() {
	python3 - "$1" "${2:-}" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
mode = sys.argv[2]
if mode == "nodist" and isinstance(d.get("extra"), dict):
    d["extra"].pop("distributed", None)
    if not d["extra"]:
        del d["extra"]
timing = ("second", "wait", "wall", "window_us", "rtt", "resends", "routes")
def drop(x):
    if isinstance(x, dict):
        return {k: drop(v) for k, v in x.items()
                if k not in ("perf", "build") and "wall" not in k
                and not (mode == "dist" and any(t in k for t in timing))}
    if isinstance(x, list):
        return [drop(v) for v in x]
    return x
print(json.dumps(drop(d), indent=1, sort_keys=True))
EOF
}

# run BINARY SCENARIO DIR PARTITIONS: one run with $flags; prints its
# exit status.
run() {
	rm -rf "$3"
	# shellcheck disable=SC2086 # flags are words
	nice -n "$nice" "$1" run "$2" --partitions "$4" $flags --out "$3" --quiet >"$3.log" 2>&1
	echo $?
}

# compare NAME A B [MODE]: the two output directories hold the same
# outputs (MODE: strip's).
compare() {
	local name=$1 a=$2 b=$3 mode=${4:-} bad=0
	local fa fb
	fa=$(cd "$a" && find . -type f ! -name summary.json | sort)
	fb=$(cd "$b" && find . -type f ! -name summary.json | sort)
	if [ "$fa" != "$fb" ]; then
		echo "DIFF $name: different files: $(diff <(echo "$fa") <(echo "$fb") | tr '\n' ' ')"
		bad=1
	fi
	for f in $fa; do
		[ -f "$b/$f" ] || continue
		if ! cmp -s "$a/$f" "$b/$f"; then
			echo "DIFF $name: $f"
			bad=1
		fi
	done
	if ! diff <(strip "$a/summary.json" "$mode") <(strip "$b/summary.json" "$mode") >"$out/$name.summary.diff"; then
		echo "DIFF $name: summary.json (see $out/$name.summary.diff)"
		bad=1
	fi
	[ $bad = 0 ] && echo "same $name"
	return $bad
}

scenarios=$(ls examples/*.yaml examples/collectives/*.yaml)
scenarios="$scenarios examples/htsim/perm1024-strack.yaml examples/htsim/perm1024-nscc.yaml"
for s in $scenarios; do
	name=$(echo "${s#examples/}" | tr / - | sed 's/\.yaml$//')
	ra=$(run "$old" "$s" "$out/$name.old" 1)
	if [ "$ra" = 2 ]; then
		# A usage error: a profile that takes no --cwnd or --queues
		# (stracksim) runs without them.
		flags=""
		ra=$(run "$old" "$s" "$out/$name.old" 1)
	fi
	rb=$(run "$new" "$s" "$out/$name.new" 1)
	flags="--cwnd --queues 10us"
	if [ "$ra" != "$rb" ]; then
		echo "DIFF $name: exit status $ra (old) and $rb (new)"
		fail=1
		continue
	fi
	if [ "$ra" != 0 ] && [ ! -f "$out/$name.old/summary.json" ]; then
		echo "skip $name: does not run here (exit $ra: $(tail -1 "$out/$name.old.log"))"
		continue
	fi
	ran=$((ran + 1))
	compare "$name" "$out/$name.old" "$out/$name.new" || fail=1
done

# NEW cut in two against OLD in one partition, and against OLD cut in two.
for n in dumbbell fattree-k8-permutation spraying-fattree dcqcn hpcc nscc-fattree; do
	rb=$(run "$new" "examples/$n.yaml" "$out/$n.new-p2" 2)
	if [ "$rb" != 0 ] && [ ! -f "$out/$n.new-p2/summary.json" ]; then
		echo "DIFF $n --partitions 2: exit $rb: $(tail -1 "$out/$n.new-p2.log")"
		fail=1
		continue
	fi
	ran=$((ran + 1))
	compare "$n-p2-vs-p1" "$out/$n.old" "$out/$n.new-p2" nodist || fail=1
	ra=$(run "$old" "examples/$n.yaml" "$out/$n.old-p2" 2)
	ran=$((ran + 1))
	compare "$n-p2-vs-p2" "$out/$n.old-p2" "$out/$n.new-p2" dist || fail=1
done

echo "$ran comparisons in $out: $([ $fail = 0 ] && echo all the same || echo SOME DIFFER)"
exit $fail
