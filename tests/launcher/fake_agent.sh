#!/bin/sh
# A launch agent for the tests: "fake_agent.sh HOST COMMAND..." runs COMMAND here, as ssh would run
# it on HOST. A host named unreachable* behaves like an ssh that cannot connect: one stderr line
# and exit 255. A host named silent* never answers (for --connect-timeout).
host=$1
# FAKE_AGENT_LOG, when set, gets one line per start: the host (the tests check the agent was used).
if [ -n "$FAKE_AGENT_LOG" ]; then echo "$host" >> "$FAKE_AGENT_LOG"; fi
case $host in
  unreachable*) echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255;;
  silent*) exec sleep 600;;
esac
# Its own session, as on another machine: strata-run's signals to the agent's process group do not
# reach the command, which must end because its stdin (the "connection") closes.
# "$*": mpirun's rsh launcher passes the command as several words, strata-run as one.
shift
exec setsid -w sh -c "$*"
