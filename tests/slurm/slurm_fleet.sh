#!/bin/bash
# A real Slurm cluster of three nodes on this host, then `nvtrace fleet` over what `srun nvtrace run` wrote.
#
#   slurm_fleet.sh NVTRACE WORKLOAD [ARGS...]      (as root; ctest label live; CI=true: a skip is a failure)
#
# Debian's Slurm 22.05 runs several slurmd on one host, each with its own port and `-N NAME`
# (../shared/reference/ci-environment.md has the recipe this follows). Everything lives in one temporary
# directory: munged's key, socket, pid, log and seed; slurm.conf; slurmctld's state; the three slurmd spools.
# Nothing of the host's own munge or Slurm set-up is read or changed (munged gets its own socket and key, which
# slurm.conf names with AuthInfo=socket=...; SLURM_CONF points the clients at the test's slurm.conf).
# The trap stops every daemon the test started (by the pids it recorded) and removes the directory on every exit.
set -u
NVTRACE=$1
shift
WORKLOAD=("$@")

skip() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $* (CI=true: a skip is a failure)"
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}
die() {
    echo "FAIL: $*"
    exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs nvtrace as root; nvtrace run needs root)"
for b in munged munge unmunge slurmctld slurmd srun sinfo scontrol python3; do
    command -v "$b" >/dev/null || skip "$b is not installed (apt-get install slurm-wlm munge)"
done

T=$(mktemp -d /tmp/nvtrace-slurm.XXXXXX) || die "mktemp"
chmod 700 "$T"
MOUNTED_TRACEFS=0
PIDS=()  # daemons started, by pid file

stop_daemons() {
    # The daemons of this test only: the pids their pid files hold (and munged's, last: slurm needs it to stop).
    local f pid
    for f in "$T"/slurmd-n1.pid "$T"/slurmd-n2.pid "$T"/slurmd-n3.pid "$T"/slurmctld.pid "$T"/munge/munged.pid; do
        [ -s "$f" ] || continue
        pid=$(cat "$f")
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
    done
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [ -n "${SLURM_CONF:-}" ] && [ -n "${JOB_ID:-}" ]; then scancel "$JOB_ID" 2>/dev/null; fi
    stop_daemons
    if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
        for f in "$T"/*.log "$T"/munge/munged.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
    fi
    rm -rf "$T"
    [ "$MOUNTED_TRACEFS" = 1 ] && umount /sys/kernel/tracing
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if ! mountpoint -q /sys/kernel/tracing; then
    mount -t tracefs nodev /sys/kernel/tracing || skip "tracefs cannot be mounted"
    MOUNTED_TRACEFS=1
fi

HOST=$(hostname -s)
NCPU=$(nproc)
# Private ports: the host's own Slurm (if any) uses 6817/6818.
CTLD_PORT=16817
SLURMD_PORT=16818

# munge: its own key (1024 random bytes, mode 400), socket, pid, log and seed, all in $T/munge.
mkdir -m 700 "$T/munge"
head -c 1024 /dev/urandom > "$T/munge/munge.key"
chmod 400 "$T/munge/munge.key"
munged --force --socket="$T/munge/munge.sock" --key-file="$T/munge/munge.key" --pid-file="$T/munge/munged.pid" \
    --log-file="$T/munge/munged.log" --seed-file="$T/munge/munged.seed" || die "munged did not start"
munge -n -S "$T/munge/munge.sock" | unmunge -S "$T/munge/munge.sock" >/dev/null || die "munge -n | unmunge failed"

mkdir -p "$T/state" "$T/spool" "$T/runs"
export SLURM_CONF="$T/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=nvtrace-test
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd-%n.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerType=sched/builtin
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
NodeName=n[1-3] NodeHostname=$HOST Port=16821-16823 CPUs=$NCPU State=UNKNOWN
PartitionName=p Nodes=n[1-3] Default=YES MaxTime=10 State=UP
CONF

slurmctld -f "$SLURM_CONF" || die "slurmctld did not start"
for n in n1 n2 n3; do slurmd -f "$SLURM_CONF" -N "$n" || die "slurmd -N $n did not start"; done
idle=0
for _ in $(seq 60); do
    idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | wc -l)
    [ "$idle" -ge 3 ] && break
    sleep 0.5
done
[ "$idle" -ge 3 ] || die "sinfo: $idle of 3 nodes idle after 30 s: $(sinfo -N 2>&1)"

# One capture per node: --out with the job id and the node name, as a site would on its shared file system.
cd "$T" || die "cd $T"
srun -N3 --ntasks-per-node=1 -t 2 "$NVTRACE" run -q --out "$T/runs/%j/%n" -- "${WORKLOAD[@]}" \
    > "$T/srun.out" 2>&1 || { cat "$T/srun.out"; die "srun nvtrace run failed"; }
JOB_DIR=$(ls -d "$T"/runs/*/ | head -1)
JOB_ID=$(basename "$JOB_DIR")
for n in n1 n2 n3; do
    [ -f "$JOB_DIR/$n/report.json" ] || { cat "$T/srun.out"; die "no $JOB_DIR$n/report.json"; }
done
echo "srun wrote: $(cd "$T/runs" && echo */*/report.json)"

python3 - "$JOB_DIR" "$JOB_ID" <<'PY' || die "the captures' environment"
import json, sys
job_dir, job_id = sys.argv[1], sys.argv[2]
for n in ("n1", "n2", "n3"):
    r = json.load(open(f"{job_dir}/{n}/report.json"))
    s = r["environment"].get("slurm", {})
    assert s.get("node") == n, (n, s)
    assert s.get("job_id") == job_id, (n, s)
    assert "step_id" in s and "task_id" in s, s
    assert r["ioctls"], f"{n}: no ioctl recorded"
    m = json.load(open(f"{job_dir}/{n}/meta.json"))
    assert m["environment"]["slurm"]["node"] == n, m["environment"]
print("environment.slurm: node, job_id, step_id, task_id in every report and meta.json")
PY

# The same workload on three nodes: one group (the signature has no timing, pids or inode numbers).
"$NVTRACE" fleet --json "$JOB_DIR" > "$T/fleet-same.json" || die "nvtrace fleet exited $?"
python3 - "$T/fleet-same.json" <<'PY' || { "$NVTRACE" fleet "$JOB_DIR"; die "three identical runs are not one group"; }
import json, sys
f = json.load(open(sys.argv[1]))
assert len(f["nodes"]) == 3, len(f["nodes"])
assert len(f["groups"]) == 1, [(g["id"], g["nodes"]) for g in f["groups"]]
assert f["majority"] == "A" and not f["outliers"]
print("undoctored: 1 group of 3 nodes")
PY

# Doctor n2: another driver version string in its environment and one more ioctl request.
python3 - "$JOB_DIR/n2/report.json" <<'PY' || die "doctoring n2"
import json, sys
p = sys.argv[1]
r = json.load(open(p))
r["environment"]["nvidia_driver_banner"] = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  "
                                            "Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Jun  3 00:00:00 UTC 2025")
r["environment"]["nvidia_driver_flavour"] = "open"
extra = dict(r["ioctls"][-1])
extra["name"], extra["cmd"] = "FIONBIO", 0x5421
extra["enter_ns"] += 1000
if extra.get("exit_ns") is not None:
    extra["exit_ns"] += 1000
r["ioctls"].append(extra)
json.dump(r, open(p, "w"))
PY

"$NVTRACE" fleet "$JOB_DIR" > "$T/fleet.txt"; rc=$?
cat "$T/fleet.txt"
[ "$rc" = 0 ] || die "nvtrace fleet exited $rc"
"$NVTRACE" fleet --json "$JOB_DIR" > "$T/fleet.json" || die "nvtrace fleet --json exited $?"
python3 - "$T/fleet.json" <<'PY' || die "fleet did not name n2 as the outlier with the right differences"
import json, sys
f = json.load(open(sys.argv[1]))
groups = {g["id"]: g for g in f["groups"]}
assert len(groups) == 2, groups
assert f["majority"] == "A", f["majority"]
assert sorted(groups["A"]["nodes"]) == ["n1", "n3"], groups["A"]
assert groups["B"]["nodes"] == ["n2"] and groups["B"]["role"] == "outlier", groups["B"]
[o] = f["outliers"]
assert o["representative"] == "n2" and o["reference"] == "n1", o
env = {e["key"]: e for e in o["environment"]}
assert set(env) == {"nvidia_driver_banner", "nvidia_driver_flavour"}, env
assert env["nvidia_driver_banner"]["majority"] is None and "575.57.08" in env["nvidia_driver_banner"]["outlier"], env
io = o["ioctls"]
assert len(io) == 1 and io[0]["request"].endswith(" FIONBIO"), io
assert io[0]["majority_count"] == 0 and io[0]["outlier_count"] == 1, io
assert o["diff"] is None and "neither report has calls" in o["diff_note"], o
nodes = {n["node"]: n for n in f["nodes"]}
assert nodes["n2"]["driver"] == "575.57.08" and nodes["n2"]["flavour"] == "open", nodes["n2"]
assert nodes["n1"]["driver"] is None, nodes["n1"]
assert nodes["n2"]["ioctls"]["total"] == nodes["n1"]["ioctls"]["total"] + 1
print("doctored: n2 is the outlier (driver 575.57.08, + FIONBIO) against n1")
PY
grep -q "^## outlier group B (n2) against A (n1)" "$T/fleet.txt" || die "text: no outlier heading for n2"
grep -q "^  + .* FIONBIO: 0 -> 1$" "$T/fleet.txt" || die "text: no '+ ... FIONBIO: 0 -> 1' line"

# --expect on every node: a check that fails (an ioctl none of them made) is exit 1.
printf 'check never-tcflsh\n  ioctls TCFLSH\n' > "$T/never.expect"
"$NVTRACE" fleet --expect "$T/never.expect" "$JOB_DIR" > /dev/null; rc=$?
[ "$rc" = 1 ] || die "fleet --expect with a failing check exited $rc, not 1"
# Bad input names the file: exit 2.
echo '{"schema": "nvtrace.report/1", "calls": [' > "$JOB_DIR/n3/report.json"
"$NVTRACE" fleet "$JOB_DIR" > /dev/null 2> "$T/bad.err"; rc=$?
[ "$rc" = 2 ] && grep -q "n3/report.json" "$T/bad.err" || die "bad report: exit $rc, $(cat "$T/bad.err")"

# Nothing left: no nvtrace instance, and (after the trap) no daemon of ours.
ls /sys/kernel/tracing/instances | grep -q '^nvtrace' && die "an nvtrace instance is left: $(ls /sys/kernel/tracing/instances)"
echo "PASS"
