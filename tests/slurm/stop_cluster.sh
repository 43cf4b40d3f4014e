#!/usr/bin/env bash
# Stop every daemon that start_cluster.sh started (listed in $RR_SLURM_STATE/started), newest
# first: TERM, up to 30 s grace, then KILL. Daemons it did not start are left alone.
# Idempotent; always exits 0 unless a daemon survives KILL.
set -uo pipefail

STATE=${RR_SLURM_STATE:-/var/tmp/rr-slurm}
say() { echo "stop_cluster: $*" >&2; }

[ -s "$STATE/started" ] || { say "nothing recorded in $STATE/started"; exit 0; }

gone() { ! kill -0 "$1" 2>/dev/null; }

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
