#!/usr/bin/env bash
# Stop every daemon that start_cluster.sh started (listed in $RR_SLURM_STATE/started), newest
# first: TERM, up to 30 s grace, then KILL. Daemons it did not start are left alone.
# When the controller is ours, the jobs still on it are cancelled first: job processes are
# tracked through /proc, not cgroups, and would outlive slurmd.
# Idempotent; always exits 0 unless a daemon survives KILL.
set -uo pipefail

STATE=${RR_SLURM_STATE:-/var/tmp/rr-slurm}
say() { echo "stop_cluster: $*" >&2; }

[ -s "$STATE/started" ] || { say "nothing recorded in $STATE/started"; exit 0; }

gone() { ! kill -0 "$1" 2>/dev/null; }

ours_alive() {  # ours_alive NAME: NAME was started by start_cluster.sh and still runs
    local pidfile
    pidfile=$(awk -v n="$1" '$1 == n {print $2}' "$STATE/started")
    [ -n "$pidfile" ] && [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

if ours_alive slurmctld && [ -n "$(squeue -h -o %A 2>/dev/null)" ]; then
    say "cancelling the jobs left on the test cluster"
    squeue -h -o %A | xargs -r scancel
    for _ in $(seq 30); do [ -z "$(squeue -h -o %A 2>/dev/null)" ] && break; sleep 1; done
fi

status=0
# newest first: slurmd, slurmctld, slurmdbd, mariadbd, munged
while read -r name pidfile; do
    [ -s "$pidfile" ] || { say "$name: no pid file $pidfile"; continue; }
    pid=$(cat "$pidfile")
    if gone "$pid"; then
        say "$name (pid $pid) not running"
        continue
    fi
    kill -TERM "$pid"
    for _ in $(seq 60); do gone "$pid" && break; sleep 0.5; done
    if ! gone "$pid"; then
        say "$name (pid $pid) ignored TERM for 30 s; sending KILL"
        kill -KILL "$pid"
        sleep 1
    fi
    if gone "$pid"; then say "$name (pid $pid) stopped"; else say "$name (pid $pid) survived KILL"; status=1; fi
done < <(tac "$STATE/started")

[ $status -eq 0 ] && rm -f "$STATE/started"
exit $status
