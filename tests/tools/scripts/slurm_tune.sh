#!/usr/bin/env bash
# ctest: a tune through Slurm for real (tools/slurm/), without a GPU: a single-node Slurm on loopback in a
# temporary folder (as docs/DESIGN.md describes), tools/slurm/submit.sh 3 with KTUNE_REPLAY (the committed
# reports/nvidia-h200/raw/search.json.gz), three array tasks of `tools/tune.sh slice` (slice 1 pre-empted
# mid-run with scontrol requeue: it must run again, its log appended to, before the merge), the dependent
# merge job's `tools/tune.sh merge 3`, and a finish that selects the merged file and diffs the results with
# the selection of the unsliced run. Skips (exit 77, "SKIP: reason") without root, Slurm, the binaries or ports.
# usage: slurm_tune.sh REPO BUILD_DIR
set -euo pipefail
repo=$1 build=$2
skip() { echo "SKIP: $*"; exit 77; }
((EUID == 0)) || skip "needs root (slurmctld and slurmd run as SlurmUser=root)"
for p in slurmctld slurmd sbatch scontrol; do
  command -v "$p" >/dev/null || skip "$p is not installed (Debian: apt-get install slurmctld slurmd slurm-client)"
done
for b in "$build/tools/ktune" "$build/bench/ktune_bench"; do [[ -x "$b" ]] || skip "$b is not built"; done
"$build/bench/ktune_bench" --slice 0/3 --list >/dev/null 2>&1 || skip "ktune_bench has no --slice K/N --list"
raw_gz="$repo/reports/nvidia-h200/raw/search.json.gz"
[[ -f "$raw_gz" ]] || skip "$raw_gz is not committed"

tmp=$(mktemp -d /tmp/ktune-slurm.XXXXXX)
ctld_pid="" slurmd_pid="" jobs=()
stop() {
  local rc=$?
  ((${#jobs[@]})) && scancel "${jobs[@]}" 2>/dev/null || true
  for pid in $slurmd_pid $ctld_pid; do kill "$pid" 2>/dev/null || true; done
  for pid in $slurmd_pid $ctld_pid; do wait "$pid" 2>/dev/null || true; done
  if ((rc == 0 || rc == 77)); then rm -rf "$tmp"; else echo "kept for inspection: $tmp"; fi
  exit "$rc"
}
trap stop EXIT
trap 'exit 1' INT TERM

# ---- a single-node Slurm: auth/cred none, no cgroups, no accounting, state in $tmp, ports off the defaults
host=$(hostname -s)
base=$((20000 + (RANDOM % 2000) * 2))
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/log"
export SLURM_CONF="$tmp/slurm.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=ktunetest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -D -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 & ctld_pid=$!
slurmd -D -f "$SLURM_CONF" >"$tmp/log/slurmd.out" 2>&1 & slurmd_pid=$!
ready=0
for _ in $(seq 1 60); do
  kill -0 "$ctld_pid" 2>/dev/null && kill -0 "$slurmd_pid" 2>/dev/null || break
  if scontrol show node "$host" 2>/dev/null | grep -q 'State=IDLE'; then ready=1; break; fi
  sleep 0.5
done
if ((ready == 0)); then
  tail -n 5 "$tmp"/log/* 2>/dev/null || true
  skip "the Slurm daemons did not start (ports $base-$((base + 1)) taken? logs above)"
fi
echo "slurm up on ports $base-$((base + 1)) after $SECONDS s"

# ---- the whole run selected once; the merge job's finish selects the merged file and compares
# (named search.json like the merged file: sources[].file is the file's name)
cd "$repo"  # the build's kernel roots (the tutorial's op in examples/) are relative to the checkout
mkdir -p "$tmp/whole"
gzip -dc "$raw_gz" >"$tmp/whole/search.json"
"$build/tools/ktune" select --raw "$tmp/whole/search.json" --results "$tmp/results-whole" \
  --build-json none >"$tmp/select-whole.log"
cat >"$tmp/finish.sh" <<FINISH
set -euo pipefail
"$build/tools/ktune" select --raw "\$KTUNE_RESULTS/raw/search.json" \
  --results "$tmp/results-merged" --build-json none >"$tmp/select-merged.log"
# The differences allowed: sources[].hash, the hash of the raw file's bytes (another file), and what the
# run's GPU step cost (a merge sums the slices' phases and their parts and takes the longest wall time).
diff -r -I '"hash": "0x' -I '"\(measure_wall_s\|startup_s\|slices\|prep_threads\|phase_[a-z]*_s\|part_[a-z_]*_s\)": ' \
  "$tmp/results-whole" "$tmp/results-merged"
touch "$tmp/finish.ok"
FINISH

# ---- the build the jobs use: the real binaries, but slice 1's first attempt waits in its ktune_bench
# until the test pre-empts it (scontrol requeue), as a node lost mid-slice would; a re-queued attempt
# (SLURM_RESTART_COUNT 1) runs as usual.
mkdir -p "$tmp/build/bench" "$tmp/build/tools"
ln -s "$build/tools/ktune" "$tmp/build/tools/ktune"
cat >"$tmp/build/bench/ktune_bench" <<BENCH
#!/usr/bin/env bash
if [[ " \$* " == *" --slice 1/3 "* && "\${SLURM_RESTART_COUNT:-0}" == 0 ]]; then
  touch "$tmp/slice-1-started"
  sleep 120
  exit 1
fi
exec "$build/bench/ktune_bench" "\$@"
BENCH
chmod +x "$tmp/build/bench/ktune_bench"

export KTUNE_OUT="$tmp/out" KTUNE_REPLAY="$tmp/whole/search.json" BUILD_DIR="$tmp/build" KTUNE_SLURM_FINISH="bash $tmp/finish.sh"
"$repo/tools/slurm/submit.sh" 3 --gpus=0 --time=10 | tee "$tmp/submit.log"
array=$(sed -n 's/^submitted slices: job \([0-9]*\).*/\1/p' "$tmp/submit.log")
merge=$(sed -n 's/^submitted merge: *job \([0-9]*\).*/\1/p' "$tmp/submit.log")
[[ -n "$array" && -n "$merge" ]] || { echo "FAIL: no job ids in the output of submit.sh"; exit 1; }
jobs=("$array" "$merge")

# ---- pre-empt slice 1 while it runs
deadline=$((SECONDS + 60))
until [[ -e "$tmp/slice-1-started" ]]; do
  ((SECONDS < deadline)) || { echo "FAIL: slice 1 did not start within 60 s"; scontrol show job; exit 1; }
  sleep 0.5
done
scontrol requeue "${array}_1"
echo "slice 1 pre-empted (scontrol requeue ${array}_1) after $SECONDS s"
# Slurm holds a re-queued job back for two minutes (Reason=BeginTime): slurmd refuses a credential issued
# in the same second as the one it revoked at the requeue ("already killed, do not launch batch job"), and
# the task then ends FAILED. The test lets it start two seconds later, past that second.
deadline=$((SECONDS + 60))
until scontrol show job "${array}_1" | grep -q 'JobState=PENDING.*Reason=BeginTime'; do
  ((SECONDS < deadline)) || { echo "FAIL: slice 1 was not re-queued within 60 s"; scontrol show job; exit 1; }
  sleep 0.5
done
scontrol update JobId="${array}_1" StartTime=now+2

# ---- wait for the merge job to end (scontrol keeps ended jobs for MinJobAge, 300 s by default)
state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
deadline=$((SECONDS + 180))
until [[ "$(state "$merge")" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)$ ]]; do
  ((SECONDS < deadline)) || { echo "FAIL: the jobs did not end within 180 s"; scontrol show job; exit 1; }
  sleep 1
done
jobs=()
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/out/slurm/*.log; do echo "== $f"; tail -n 20 "$f"; done
  # What the daemons said of the jobs (a launch refused leaves nothing in the job's own log).
  for f in "$tmp"/log/slurmctld.log "$tmp"/log/slurmd.log; do echo "== $f"; grep -v -i 'pmix\|mpi' "$f" | tail -n 30; done
  exit 1
}
slices=$(state "$array")
[[ $(wc -w <<<"$slices") == 3 ]] || fail "expected 3 array tasks, scontrol shows: $slices"
for s in $slices; do [[ "$s" == COMPLETED ]] || fail "an array task ended $s"; done
[[ "$(state "$merge")" == COMPLETED ]] || fail "the merge job ended $(state "$merge")"
[[ -f "$tmp/finish.ok" ]] || fail "the finish check did not pass"
for k in 0 1 2; do [[ -s "$tmp/out/raw/slices/$k/search.json" ]] || fail "slice $k wrote no search.json"; done
grep -q '"slices": "3"' "$tmp/out/raw/search.json" || fail "raw/search.json is not a merge of 3 slices"
# The re-queued task ran again, its log appended to.
grep -q 'restart 0)' "$tmp/out/slurm/slice-1.log" && grep -q 'restart 1)' "$tmp/out/slurm/slice-1.log" ||
  fail "slice 1's log does not show its first attempt and its re-queued one"
[[ "$(cat "$tmp/out/raw/gpu-slug")" == nvidia-h200 ]] || fail "raw/gpu-slug is not nvidia-h200"
echo "slurm: 3 slices (one pre-empted and re-queued) and the merge COMPLETED; the merged selection equals the whole run's ($SECONDS s)"
